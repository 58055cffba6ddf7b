# Makes the PyTorch traces of this folder on a GPU machine (PyTorch 2.11, CUDA 13, an H100):
#   python3 make_torch_traces.py OUT_DIR
# torch_stack.json / torch_nostack.json with their key_averages rows, and an execution trace
# with the trace of the same steps (torch_et.json, torch_et_trace.json). Then gzip the traces.
import json, os, sys

import torch
from torch.profiler import ExecutionTraceObserver, ProfilerActivity, profile, schedule

out = sys.argv[1]
torch.manual_seed(0)
dev = "cuda"
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(),
                            torch.nn.Linear(512, 10)).to(dev)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
x = torch.randn(64, 256, device=dev)
y = torch.randint(0, 10, (64,), device=dev)


def step(i):
    with torch.profiler.record_function(f"train_step_{i}"):
        opt.zero_grad(set_to_none=False)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        s = 0.0
        for k in range(12):  # a for-loop indexing pattern and synchronizing items
            s += x[k, 0].item()
        return loss.item() + s


def profiled(**kw):
    prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True,
                   schedule=schedule(wait=1, warmup=1, active=2), **kw)
    with prof:
        for i in range(4):
            step(i)
            torch.cuda.synchronize()
            prof.step()
    return prof


def key_averages(tag, with_stack):
    prof = profiled(with_stack=with_stack)
    prof.export_chrome_trace(os.path.join(out, f"torch_{tag}.json"))
    rows = [dict(key=e.key, count=e.count, self_cpu_us=e.self_cpu_time_total, cpu_us=e.cpu_time_total)
            for e in prof.key_averages()]
    with open(os.path.join(out, f"torch_{tag}.key_averages.json"), "w") as f:
        json.dump(dict(rows=rows), f, indent=0)


def execution_trace():
    et = ExecutionTraceObserver().register_callback(os.path.join(out, "torch_et.json"))
    prof = profiled(with_stack=True, acc_events=True, execution_trace_observer=et)
    prof.export_chrome_trace(os.path.join(out, "torch_et_trace.json"))
    et.unregister_callback()


execution_trace()
key_averages("stack", True)
key_averages("nostack", False)
