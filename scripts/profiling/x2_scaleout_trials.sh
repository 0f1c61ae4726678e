python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:/tmp/site
timeout 150 python3 -m pytest -q -x -m multigpu -p no:cacheprovider tests/test_scaleout_gpu.py 2>&1 | tail -3
timeout 150 bash benchmarks/gpu_scaleout_allpairs.sh $OUT 2>&1 | grep -E "^==|wall|scored|identical|blocks"
DB=/tmp/sp570k; Q=/tmp/ecoli_2000.fasta
python3 benchmarks/swissprot_like_db.py --count 570000 -o $DB.nwdb > /dev/null
python3 -c "
from nwalign.sequences import read_fasta
print(''.join(f'>{r.description}\n{r.seq}\n' for r in read_fasta('data/swissprot_ecoli_k12_4306.fasta.gz')[:2000]), end='')" > $Q
python3 -m nwalign search data/queries_5_opal.fasta $DB.nwdb --devices 0,1 --top 1 -o /dev/null
for shards in 2 4 6; do
  echo "== search 2 GPUs, $shards shards"
  /usr/bin/time -f "%e s wall" python3 -c "
import nwalign.dbsearch as d
init = d._ScaleOut.__init__
def patched(self, database, db, workers, scheduler, client, shards, *a, **k):
    init(self, database, db, workers, scheduler, client, $shards, *a, **k)
d._ScaleOut.__init__ = patched
from nwalign.launch import main; main()" search $Q $DB.nwdb --top 10 --devices 0,1 -o /tmp/two_$shards.tsv
done
echo "== search 1 GPU"; /usr/bin/time -f "%e s wall" python3 -m nwalign search $Q $DB.nwdb --top 10 --devices 0 -o /tmp/one.tsv
md5sum /tmp/one.tsv /tmp/two_*.tsv
