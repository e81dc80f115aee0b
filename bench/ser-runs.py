#!/usr/bin/env python3
"""Medians over several `granola-bench ser --json` runs: serialize + decode per
library and shape, the advantage over the fastest peer, and decode against
the hand-written floor.  Usage: bench/ser-runs.py "bench/results/DIR/run-*.json"
"""
import json,statistics,glob,sys
runs=[json.load(open(f)) for f in sorted(glob.glob(sys.argv[1]))]
shapes=['a','a-hot','b','c','d','e-64k','e-1m']
libs=[]
for r in runs[0]:
    if r['library'] not in libs: libs.append(r['library'])
def med(lib,shape,key):
    v=[r[key] for run in runs for r in run if r['library']==lib and r['shape']==shape and r[key] is not None]
    return (statistics.median(v),min(v),max(v)) if v else None
print("serialize + decode-and-touch ns/message: median of %d run medians [min-max of serialize+decode]"%len(runs))
print("%-14s|"%"library"+"|".join("%22s"%s for s in shapes))
tot={}
for l in libs:
    cells=[]
    for s in shapes:
        a=med(l,s,'serialize_ns'); b=med(l,s,'deserialize_ns')
        if a is None or b is None: cells.append("%22s"%"-"); continue
        per=[ (x['serialize_ns'] or 0)+(x['deserialize_ns'] or 0) for run in runs for x in run if x['library']==l and x['shape']==s]
        tot[(l,s)]=statistics.median(per)
        cells.append("%22s"%("%d+%d=%d [%d-%d]"%(a[0],b[0],statistics.median(per),min(per),max(per))))
    print("%-14s|"%l+"|".join(cells))
peers=['prost','buffa','flatbuffers','capnp','rkyv','bincode','bitcode']
print()
print("fastest peer (serialize+decode) and granola's advantage (fastest peer / granola):")
for s in shapes:
    fp=min(peers,key=lambda p:tot.get((p,s),1e18))
    row=["%s: fastest peer %s %d ns"%(s,fp,tot[(fp,s)])]
    for g in ['granola-hybrid','granola-ref','granola-owned','granola-view']:
        if (g,s) not in tot: continue  # not in these runs (--libs)
        row.append("%s %.1fx"%(g.replace('granola-',''),tot[(fp,s)]/tot[(g,s)]))
    print("  "+"; ".join(row))
print()
print("decode-and-touch / handwritten floor:")
for g in ['granola-hybrid','granola-owned','granola-view']:
    if g not in libs: continue
    print("  %-14s "%g+"  ".join("%s %.1fx"%(s,med(g,s,'deserialize_ns')[0]/med('handwritten',s,'deserialize_ns')[0]) for s in shapes))
