#!/usr/bin/python3
# Throughput on one GPU in bf16 (run from the repository root: python3 examples/gpt/bench_gpu.py):
# PyTorch's own loop against the same loop through the batchlab client (run.steps, run.backward
# with the gradient noise from two half-batches every 10 steps, run.log_step), for the
# architecture of examples/gpt/train.py (byte embedding + learned positions, pre-norm blocks of
# causal attention written out and a GELU MLP, tied output) at GPT-2-small size: d_model 768,
# 12 layers, 12 heads, context 1024, batch 16, AdamW, bf16 autocast, 5 warm-up + 30 timed steps,
# random bytes. Prints tokens/s and the model FLOPs utilisation against 989 TFLOPS (H100/H200
# SXM dense bf16); FLOPs per token 6 x non-embedding parameters + 12 x layers x d_model x
# context (PaLM's count). The model is written out here in compact form (not imported from
# train.py) so that the whole script fits the device runner's command line; it is the script
# that produced the numbers in docs/branch-study.md.
import sys,time,json,os,tempfile,torch,torch.nn as nn,torch.nn.functional as F
sys.path.insert(0,'clients/python');import batchlab;from batchlab.config import RunConfig
D,L,H,T,B,S,W=768,12,12,1024,16,30,5
class K(nn.Module):
 def __init__(s):super().__init__();s.a,s.b=nn.LayerNorm(D),nn.LayerNorm(D);s.q,s.p=nn.Linear(D,3*D),nn.Linear(D,D);s.m=nn.Sequential(nn.Linear(D,4*D),nn.GELU(),nn.Linear(4*D,D))
 def forward(s,x,m):
  b,t,d=x.shape;q,k,v=(z.transpose(1,2) for z in s.q(s.a(x)).view(b,t,3,H,d//H).unbind(2))
  a=((q@k.transpose(-2,-1))*(d//H)**-.5).masked_fill(m,float('-inf')).softmax(-1)
  x=x+s.p((a@v).transpose(1,2).reshape(b,t,d));return x+s.m(s.b(x))
class G(nn.Module):
 def __init__(s):super().__init__();s.e=nn.Embedding(256,D);s.o=nn.Parameter(torch.zeros(T,D));s.k=nn.ModuleList(K() for _ in range(L));s.n=nn.LayerNorm(D)
 def forward(s,i):
  t=i.shape[1];m=torch.ones(t,t,dtype=torch.bool,device=i.device).triu(1)
  with torch.autocast('cuda',dtype=torch.bfloat16):
   x=s.e(i)+s.o[:t]
   for b in s.k:x=b(x,m)
   return (s.n(x)@s.e.weight.t()).float()
lf=lambda o,y:F.cross_entropy(o.flatten(0,1),y.flatten())
data=torch.randint(0,256,(4*B,T+1)).cuda()
def mk():
 torch.manual_seed(1);m=G().cuda();return m,torch.optim.AdamW(m.parameters(),lr=3e-4,weight_decay=.1)
m,_=mk();P=sum(p.numel() for p in m.parameters())-m.e.weight.numel()-m.o.numel();FT=6*P+12*L*D*T
def xy(s):w=data[s%4*B:(s%4+1)*B];return w[:,:-1],w[:,1:]
def rep(n,sec):tps=S*B*T/sec;print(json.dumps(dict(loop=n,tokens_per_s=round(tps),mfu=round(tps*FT/989e12,4),step_ms=round(1000*sec/S,1),params=P,torch=torch.__version__)),flush=True)
m,o=mk()
for s in range(W+S):
 if s==W:torch.cuda.synchronize();t0=time.perf_counter()
 x,y=xy(s);o.zero_grad(set_to_none=True);l=lf(m(x),y);l.backward();o.step();l.item()
torch.cuda.synchronize();rep('pytorch',time.perf_counter()-t0)
d=tempfile.mkdtemp();c=d+'/c.json'
json.dump(dict(run_id='b',batch_size=B,budget=dict(steps=W+S),gns=dict(every_steps=10),lr=dict(base=3e-4,base_batch_size=B),checkpoint=dict(every_seconds=0),metrics_path=d+'/m.jsonl'),open(c,'w'))
r=batchlab.Run(RunConfig.load(c));m,o=mk()
for s in r.steps(optimizer=o):
 if s==W+1:torch.cuda.synchronize();t0=time.perf_counter()
 x,y=xy(s-1);o.zero_grad(set_to_none=True);l=r.backward(m,lf,x,y);o.step();r.log_step(l)
torch.cuda.synchronize();rep('batchlab-client',time.perf_counter()-t0);r.finish(exit=False)
