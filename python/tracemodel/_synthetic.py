"""Generated Kineto traces of a multi-rank run, for the cluster's tests and benchmarks: each rank
a file with its ``distributedInfo``, profiler steps, ops launching kernels on two compute
streams, copies with their bandwidth, and an all-reduce per step on a communication stream whose
start each rank reaches a little late or early (seeded: the same arguments, the same bytes)."""

import gzip
import random


def write_rank(path, rank, world_size=16, steps=4, launches_per_step=100, seed=1):
    """Writes ``path`` (``.json`` or ``.json.gz``): ``steps`` steps of ``launches_per_step``
    launches each (an op, its launch and its kernel or copy: three events a launch), returns the
    number of events written."""
    rng = random.Random(seed * 1_000_003 + rank)
    opener = gzip.open if path.endswith(".gz") else open
    events = 0
    with opener(path, "wt") as f:
        f.write('{"schemaVersion":1,"distributedInfo":{"backend":"nccl","rank":%d,'
                '"world_size":%d},"traceEvents":[\n' % (rank, world_size))
        f.write('{"ph":"M","name":"process_name","pid":1,"tid":0,"args":{"name":"rank %d"}}'
                % rank)
        ts = 1_000_000  # ns
        corr = 1
        for step in range(steps):
            step_start = ts
            out = []
            for k in range(launches_per_step):
                copy = k % 10 == 9
                stream = 7 + (k % 2)
                op_dur = 4_000 + rng.randrange(3_000)
                name = ("Memcpy HtoD (Pageable -> Device)" if copy
                        else "void kernel_%d<float>(float*, int)" % (k % 23))
                out.append('{"ph":"X","cat":"cpu_op","name":"aten::op_%d","pid":1,"tid":1,'
                           '"ts":%d.%03d,"dur":%d.%03d,"args":{"External id":%d}}'
                           % (k % 17, ts // 1000, ts % 1000, op_dur // 1000, op_dur % 1000,
                              corr))
                launch = ts + 500
                out.append('{"ph":"X","cat":"cuda_runtime","name":"%s","pid":1,"tid":1,'
                           '"ts":%d.%03d,"dur":2.%03d,"args":{"External id":%d,'
                           '"correlation":%d}}'
                           % ("cudaMemcpyAsync" if copy else "cudaLaunchKernel", launch // 1000,
                              launch % 1000, rng.randrange(1000), corr, corr))
                start = launch + 6_000 + rng.randrange(4_000)
                dur = 2_000 + rng.randrange(9_000)
                extra = (',"bytes":1048576,"memory bandwidth (GB/s)":%d.5' % (100 + k % 40)
                         if copy else "")
                out.append('{"ph":"X","cat":"%s","name":"%s","pid":0,"tid":%d,"ts":%d.%03d,'
                           '"dur":%d.%03d,"args":{"External id":%d,"device":0,"stream":%d,'
                           '"correlation":%d%s}}'
                           % ("gpu_memcpy" if copy else "kernel", name, stream, start // 1000,
                              start % 1000, dur // 1000, dur % 1000, corr, stream, corr, extra))
                corr += 1
                ts += op_dur + 200
            # The step's all-reduce: launched at the step's end, late on some ranks.
            launch = ts + rng.randrange(20_000)
            out.append('{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,'
                       '"tid":1,"ts":%d.%03d,"dur":3.000,"args":{"External id":%d,'
                       '"correlation":%d}}' % (launch // 1000, launch % 1000, corr, corr))
            start, dur = launch + 5_000, 40_000 + rng.randrange(30_000)
            out.append('{"ph":"X","cat":"kernel","name":"ncclKernel_AllReduce_RING_LL_Sum_float'
                       '(ncclWorkElem)","pid":0,"tid":20,"ts":%d.%03d,"dur":%d.%03d,"args":'
                       '{"External id":%d,"device":0,"stream":20,"correlation":%d}}'
                       % (start // 1000, start % 1000, dur // 1000, dur % 1000, corr, corr))
            corr += 1
            ts = start + dur + 10_000
            out.append('{"ph":"X","cat":"user_annotation","name":"ProfilerStep#%d","pid":1,'
                       '"tid":1,"ts":%d.%03d,"dur":%d.%03d,"args":{}}'
                       % (step, step_start // 1000, step_start % 1000,
                          (ts - step_start) // 1000, (ts - step_start) % 1000))
            f.write(",\n" + ",\n".join(out))
            events += len(out)
        f.write("\n]}\n")
    return events


def write_run(folder, ranks=16, **kw):
    """``ranks`` files ``rank-N.json.gz`` in ``folder``; returns their paths."""
    import os
    os.makedirs(folder, exist_ok=True)
    paths = []
    for r in range(ranks):
        p = os.path.join(folder, "rank-%d.json.gz" % r)
        write_rank(p, r, world_size=ranks, **kw)
        paths.append(p)
    return paths
