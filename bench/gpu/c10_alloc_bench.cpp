// bench/gpu/c10_alloc_bench.cpp - PyTorch's CUDA caching allocator (c10),
// called from C++ without Python, measured exactly as bench/alloc_bench.c and
// bench/alloc_replay.c measure xdev's, so the numbers sit side by side:
//
//   c10_alloc_bench hot                 hot raw_alloc+raw_delete pair, churn
//   c10_alloc_bench replay TRACE...     replay of ../shared/traces/*.csv.gz
//
// Built by tests/gpu/run.sh against the GPU machine's torch (torch/include,
// torch/lib: libc10_cuda, libc10), not by CMake: CI has no PyTorch. The
// clock and the median are bench_util.h's, as on xdev's side.
#include "../bench_util.h"
#undef CHECK // xdev's call check; c10's logging header defines its own CHECK

#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

namespace alloc = c10::cuda::CUDACachingAllocator;

static double median(std::vector<double> v) {
    return median(v.data(), (int)v.size());
}

// ------------------------------------------------------------- hot pair + churn (alloc_bench.c)

static double hot_pair(size_t size, int iters) {
    std::vector<double> t;
    alloc::raw_delete(alloc::raw_alloc(size));
    for (int r = 0; r < 15; r++) {
        double t0 = now_ns();
        for (int i = 0; i < iters; i++)
            alloc::raw_delete(alloc::raw_alloc(size));
        t.push_back((now_ns() - t0) / iters);
    }
    return median(t);
}

static uint64_t xorshift(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static size_t random_size(uint64_t *s) { // log-uniform in [512 B, 8 MiB]
    int l2 = 9 + (int)(xorshift(s) % 14);
    size_t lo = (size_t)1 << l2;
    return lo + (size_t)(xorshift(s) % lo);
}

static double churn(int steps, uint64_t seed) {
    void *live[64];
    for (auto &p : live)
        p = alloc::raw_alloc(random_size(&seed));
    double t0 = now_ns();
    for (int i = 0; i < steps; i++) {
        int k = (int)(xorshift(&seed) % 64);
        alloc::raw_delete(live[k]);
        live[k] = alloc::raw_alloc(random_size(&seed));
    }
    double ns = (now_ns() - t0) / steps;
    for (auto p : live)
        alloc::raw_delete(p);
    return ns;
}

static int run_hot() {
    std::printf("c10 alloc_bench on cuda:0\n\nhot raw_alloc+raw_delete pair (median of 15 runs)\n");
    const size_t sizes[] = {512, 4096, 65536, 1 << 20, 8 << 20, 64 << 20};
    for (size_t s : sizes)
        std::printf("  %10zu B  %8.1f ns/pair\n", s, hot_pair(s, 200000));
    std::vector<double> t;
    for (int r = 0; r < 15; r++)
        t.push_back(churn(100000, 0x9E3779B97F4A7C15ULL + (uint64_t)r));
    std::printf("\nchurn, 64 live blocks 512 B-8 MiB, 1 thread: %8.1f ns/step (median)\n",
                median(t));
    return 0;
}

// ------------------------------------------------------------- trace replay (alloc_replay.c)

struct Event {
    bool is_free;
    uint64_t addr;
    size_t size;
    int stream;
};

static bool load(const char *path, std::vector<Event> &ev, int &max_stream) {
    std::string cmd = std::string("gzip -dcf '") + path + "'";
    FILE *f = popen(cmd.c_str(), "r");
    if (!f) return false;
    char line[256], action[16];
    unsigned long long addr, size;
    int stream;
    max_stream = 0;
    while (std::fgets(line, sizeof line, f)) {
        if (std::sscanf(line, "%15[a-z],%llu,%llu,%d", action, &addr, &size, &stream) != 4)
            continue;
        bool is_free = std::strcmp(action, "free") == 0;
        if (!is_free && std::strcmp(action, "alloc") != 0) continue;
        if (stream < 0) stream = 0;
        ev.push_back({is_free, addr, (size_t)size, stream});
        max_stream = std::max(max_stream, stream);
    }
    pclose(f);
    return !ev.empty();
}

// One pass; ns per event. Leaves nothing allocated.
static double replay(const std::vector<Event> &ev, const std::vector<cudaStream_t> &streams) {
    std::unordered_map<uint64_t, void *> live;
    live.reserve(ev.size());
    double t0 = now_ns();
    for (const Event &e : ev) {
        if (e.is_free) {
            auto it = live.find(e.addr);
            if (it != live.end()) {
                alloc::raw_delete(it->second);
                live.erase(it);
            }
        } else {
            void *p = alloc::raw_alloc_with_stream(e.size, streams[e.stream]);
            auto it = live.find(e.addr);
            if (it != live.end()) {
                alloc::raw_delete(it->second);
                it->second = p;
            } else {
                live.emplace(e.addr, p);
            }
        }
    }
    double t1 = now_ns();
    for (auto &kv : live)
        alloc::raw_delete(kv.second);
    return (t1 - t0) / (double)ev.size();
}

static int run_replay(int argc, char **argv) {
    std::printf("c10 alloc_replay on cuda:0\n%-24s %8s %10s %10s %10s %10s %8s %8s\n", "trace",
                "events", "cold ns/op", "warm ns/op", "peak alloc", "peak resv", "overhead",
                "segments");
    for (int a = 2; a < argc; a++) {
        std::vector<Event> ev;
        int max_stream = 0;
        if (!load(argv[a], ev, max_stream)) {
            std::fprintf(stderr, "c10_alloc_bench: cannot read %s\n", argv[a]);
            return 1;
        }
        std::vector<cudaStream_t> streams(max_stream + 1, nullptr); // 0: the default stream
        for (int s = 1; s <= max_stream; s++)
            streams[s] = c10::cuda::getStreamFromPool().stream();
        alloc::emptyCache();
        alloc::resetPeakStats(0);
        alloc::resetAccumulatedStats(0);
        double cold = replay(ev, streams);
        auto st = alloc::getDeviceStats(0);
        std::vector<double> warm;
        for (int r = 0; r < 5; r++)
            warm.push_back(replay(ev, streams));
        double pa = (double)st.allocated_bytes[0].peak / 1048576.0;
        double pr = (double)st.reserved_bytes[0].peak / 1048576.0;
        const char *base = std::strrchr(argv[a], '/');
        base = base ? base + 1 : argv[a];
        std::printf("%-24s %8zu %10.1f %10.1f %7.0f MiB %7.0f MiB %4.0f MiB %8lld\n", base,
                    ev.size(), cold, median(warm), pa, pr, pr - pa,
                    (long long)st.segment[0].allocated);
        c10::cuda::device_synchronize();
        alloc::emptyCache();
    }
    return 0;
}

int main(int argc, char **argv) {
    try {
        alloc::init(c10::cuda::device_count());
        c10::cuda::set_device(0);
        if (argc >= 2 && std::strcmp(argv[1], "hot") == 0) return run_hot();
        if (argc >= 3 && std::strcmp(argv[1], "replay") == 0) return run_replay(argc, argv);
        std::fprintf(stderr, "usage: c10_alloc_bench hot | replay TRACE.csv[.gz]...\n");
        return 2;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "c10_alloc_bench: %s\n", e.what());
        return 1;
    }
}
