import sys
sys.path.insert(0, '.')
from nwalign.scoring import make_scoring
from nwalign.sequences import random_records, mutate
from nwalign.cuda.pair import Options, run_kernel
sc = make_scoring('dna')
(a,) = random_records([100000], 'dna', 1)
b = mutate(a, 0.1, 2)
q, t = sc.encode(a), sc.encode(b)
print(run_kernel(q, t, sc, False, Options(kernel='wavefront'))[0][0])
