import sys, os, json, torch
from torch.profiler import profile, ProfilerActivity, schedule
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
        for k in range(12):
            s += x[k, 0].item()
        return loss.item() + s
def run(tag, with_stack):
    prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True, with_stack=with_stack,
                   schedule=schedule(wait=1, warmup=1, active=2))
    with prof:
        for i in range(4):
            step(i); torch.cuda.synchronize(); prof.step()
    prof.export_chrome_trace(os.path.join(out, f"torch_{tag}.json"))
    rows = []
    for e in prof.key_averages():
        rows.append(dict(key=e.key, count=e.count, self_cpu_us=e.self_cpu_time_total, cpu_us=e.cpu_time_total,
                         self_device_us=getattr(e, "self_device_time_total", 0.0), device_us=getattr(e, "device_time_total", 0.0)))
    evs = []
    for e in prof.events():
        evs.append(dict(name=e.name, id=e.id, start_us=e.time_range.start, end_us=e.time_range.end, thread=e.thread,
                        parent=(e.cpu_parent.id if e.cpu_parent is not None else None), device_type=str(e.device_type),
                        self_cpu_us=e.self_cpu_time_total))
    json.dump(dict(rows=rows, events=evs), open(os.path.join(out, f"torch_{tag}_key_averages.json"), "w"))
    print(tag, "rows", len(rows), "events", len(evs), flush=True)
run("stack", True)
run("nostack", False)
