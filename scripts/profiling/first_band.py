"""Which first band nwalign.bands.optimal_scores should use: for COUNT random pairs of genomes within 1 % of
each other's length, the banded optimum at first half-widths 32, 64, 128, 192, 256 and the identity
filter's widest band (CPU engine), the second band proof_band gives where the first does not prove the
optimum, and the cells the GPU kernel would sweep for both (256 + the band's width per row). Dev machine,
~2 minutes.
    python3 scripts/profiling/first_band.py [COUNT]"""
import sys
import numpy as np
from concurrent.futures import ThreadPoolExecutor
from nwalign.sequences import read_fasta
from nwalign.scoring import make_scoring
from nwalign.engine import encode_all
from nwalign.bands import OutsideBound, band_limits, proof_band, widest_band
from nwalign.cpu.banded import banded_score
recs = read_fasta('data/sars-cov-2_418_nextstrain.fasta.gz')
s = make_scoring("dna", "global", None, None, None, None, None)
codes=[e.codes for e in encode_all(recs, s, 'x')]
A=s.matrix.shape[0]; S=np.ascontiguousarray(s.matrix,dtype=np.int64)
ob=OutsideBound(s,np.stack([np.bincount(c,minlength=A) for c in codes]))
rng=np.random.default_rng(3)
ij=[]
while len(ij)<(int(sys.argv[1]) if len(sys.argv) > 1 else 160):
    a,b=sorted(rng.choice(len(codes),2,replace=False).tolist())
    if min(len(codes[a]),len(codes[b]))>=0.99*max(len(codes[a]),len(codes[b])): ij.append((a,b))
ij=np.array(ij); i,j=ij[:,0],ij[:,1]; m=np.array([len(codes[k]) for k in i]); n=np.array([len(codes[k]) for k in j])
W=np.array([widest_band(x,y,0.99) for x,y in zip(m,n)])
def cost(w):  # kernel columns swept x rows
    lo=np.minimum(0,n-m)-w; hi=np.maximum(0,n-m)+w
    return (np.ceil(m/256)*256*np.minimum(n,256+hi-lo)).sum()
def bs(args):
    k,w=args; lo,hi=band_limits(int(m[k]),int(n[k]),int(w)); return banded_score(codes[i[k]],codes[j[k]],S,s.gap_open,s.gap_extend,lo,hi)
res={}
with ThreadPoolExecutor(2) as p:
    for label in ['32','64','128','192','256','W']:
        w0=W.copy() if label=='W' else np.full(len(ij),int(label))
        sc=np.array(list(p.map(bs,[(k,w0[k]) for k in range(len(ij))])))
        ub=ob(i,j,m,n,w0); todo=sc<ub
        ws=proof_band(ob,i,j,m,n,sc,w0+1)
        w2=np.where(todo,ws,0)
        c1=cost(w0); c2=cost(ws[todo]) if False else ( (np.ceil(m/256)*256*np.minimum(n,256+(np.maximum(0,n-m)+ws)-(np.minimum(0,n-m)-ws)))[todo].sum())
        print(label,'proved first',int((~todo).sum()),'cells first %.2e second %.2e total %.2e'%(c1,c2,c1+c2), 'max w2', int(w2.max()), flush=True)
