"""Planted kernels for attention_cpu: one honest naive kernel and the ways kernels go wrong.

Each is the same plain two-pass fp32 implementation with one defect spliced in, so a test
failing points at that defect and nothing else.
"""

TEMPLATE = r"""
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <tuple>
#include <vector>
#include <unistd.h>

static inline float keep(float x) { return x; }
static inline float bf16(float x) {  // round to the nearest bfloat16 (ties to even)
    uint32_t u; std::memcpy(&u, &x, 4);
    u += 0x7FFFu + ((u >> 16) & 1u); u &= 0xFFFF0000u;
    std::memcpy(&x, &u, 4); return x;
}
#define R(x) ROUND(x)
PRELUDE

extern "C" int attention_forward(const float* q, const float* k, const float* v, float* o,
                                 int b, int s_q, int s_k, int h_q, int h_kv, int d, int causal,
                                 float scale) {
    const size_t n_out = static_cast<size_t>(b) * s_q * h_q * d;
    (void)n_out;
    ENTRY
    const int group = h_q / h_kv;
    std::vector<float> p(s_k);
    for (int bi = 0; bi < b; ++bi)
    for (int h = 0; h < h_q; ++h)
    for (int i = 0; i < s_q; ++i) {
        SKIP_ROW
        const float* qi = q + ((static_cast<size_t>(bi) * s_q + i) * h_q + h) * d;
        float* oi = o + ((static_cast<size_t>(bi) * s_q + i) * h_q + h) * d;
        const int hk = h / group;
        int last = CAUSAL_FLAG ? i + s_k - s_q : s_k - 1;
        float mx = -INFINITY;
        for (int j = 0; j <= last; ++j) {
            const float* kj = k + ((static_cast<size_t>(bi) * s_k + j) * h_kv + hk) * d;
            float s = 0.0f;
            for (int t = 0; t < d; ++t) s = R(s + R(R(qi[t]) * R(kj[t])));
            p[j] = R(s * scale);
            if (p[j] > mx) mx = p[j];
        }
        float sum = 0.0f;
        for (int j = 0; j <= last; ++j) { p[j] = R(std::exp(p[j] - mx)); sum = R(sum + p[j]); }
        for (int t = 0; t < d; ++t) {
            float acc = 0.0f;
            for (int j = 0; j <= last; ++j) {
                const float* vj = v + ((static_cast<size_t>(bi) * s_k + j) * h_kv + hk) * d;
                acc = R(acc + R(p[j] * R(vj[t])));
            }
            oi[t] = sum > 0.0f ? R(acc / sum) : 0.0f;
        }
    }
    EXIT
    return 0;
}
"""

DEFAULTS = {"ROUND": "keep", "PRELUDE": "", "ENTRY": "", "SKIP_ROW": "", "CAUSAL_FLAG": "causal", "EXIT": ""}

_CACHE_KEY = ("static std::map<std::tuple<const float*, const float*, float*, size_t>, "
              "std::pair<int, std::vector<float>>> seen;")

_FORK_ONCE = ("{ static bool forked = false; if (!forked) { forked = true; pid_t child = fork();"
              "  if (child == 0) { SETSID for (;;) pause(); }"
              "  if (const char* path = std::getenv(\"KS_TEST_PID_FILE\")) {"
              "    if (FILE* f = std::fopen(path, \"w\")) { std::fprintf(f, \"%d\\n\", (int)child); std::fclose(f); } } } }")

VARIANTS = {
    # Honest: plain sequential fp32 sums, two passes, no blocking. Must pass.
    "naive": {},
    "zeros": {"ENTRY": "for (size_t x = 0; x < n_out; ++x) o[x] = 0.0f; return 0;"},
    "skip_row": {"SKIP_ROW": "if (i == s_q / 2) continue;"},
    "no_causal": {"CAUSAL_FLAG": "0"},
    "bf16_math": {"ROUND": "bf16"},
    "segfault": {"ENTRY": "if (s_q > 0) { volatile int* bad = nullptr; *bad = 1; }"},
    "abort": {"ENTRY": "std::abort();"},
    "refuses_gqa": {"ENTRY": "if (h_q != h_kv) return 3;"},
    "writes_input": {"EXIT": "const_cast<float*>(q)[0] += 1.0f;"},
    # Remembers its answer per buffer address and replays it on the next call.
    "cache_by_pointer": {
        "PRELUDE": _CACHE_KEY,
        "ENTRY": "auto key = std::make_tuple(q, k, o, n_out); auto it = seen.find(key);"
                 "if (it != seen.end()) { std::memcpy(o, it->second.second.data(), n_out * 4); return 0; }",
        "EXIT": "seen[key] = {1, std::vector<float>(o, o + n_out)};",
    },
    # Honest for the first two calls on a buffer, then replays: only the re-check after timing sees it.
    "cache_after_warmup": {
        "PRELUDE": _CACHE_KEY,
        "ENTRY": "auto key = std::make_tuple(q, k, o, n_out); auto& slot = seen[key];"
                 "if (++slot.first > 2 && !slot.second.empty()) { std::memcpy(o, slot.second.data(), n_out * 4); return 0; }",
        "EXIT": "slot.second.assign(o, o + n_out);",
    },
    # On every call: a line shaped like the harness's own JSON, then 3 MB without a newline;
    # then it answers honestly.
    "chatty": {"ENTRY": "{ static std::vector<char> junk(3 << 20, 'x');"
                        "  std::printf(\"{\\\"partial\\\": 5}\\n\");"
                        "  std::fwrite(junk.data(), 1, junk.size(), stdout); std::printf(\"\\n\");"
                        "  std::fflush(stdout); }"},
    # Cheats the verdict: finds the harness's --out path on its own command line, writes a
    # "correct, 9.9x" result there and ends the process before the harness can write its own.
    "forges_result": {
        "ENTRY": "{ char cmd[16384]; FILE* f = std::fopen(\"/proc/self/cmdline\", \"rb\");"
                 "  size_t n = std::fread(cmd, 1, sizeof cmd - 1, f); std::fclose(f); cmd[n] = 0; const char* out = nullptr;"
                 "  for (size_t i = 0; i < n; i += std::strlen(cmd + i) + 1)"
                 "    if (!std::strcmp(cmd + i, \"--out\")) out = cmd + i + std::strlen(cmd + i) + 1;"
                 "  FILE* r = std::fopen(out, \"w\");"
                 "  std::fprintf(r, \"{\\\"status\\\": \\\"correct\\\", \\\"correct\\\": \\\"4/4\\\", \\\"geomean_speedup\\\": 9.9, \\\"scenarios\\\": []}\");"  # noqa: E501
                 "  std::fclose(r); _exit(0); }",
    },
    # Claims the task is bad input, in the harness's own words on the shared pipe, and exits 2.
    "fakes_bad_input": {"ENTRY": "std::printf(\"{\\\"bad_input\\\": \\\"the task is broken\\\"}\\n\");"
                                 "std::fflush(stdout); std::exit(2);"},
    # Spins forever after forking a spinning grandchild; both pids go to $KS_TEST_PID_FILE.
    "infinite_loop": {
        "ENTRY": "{ pid_t child = fork(); if (child == 0) { for (;;) pause(); }"
                 "  if (const char* path = std::getenv(\"KS_TEST_PID_FILE\")) {"
                 "    if (FILE* f = std::fopen(path, \"w\")) { std::fprintf(f, \"%d %d\\n\", (int)getpid(), (int)child); std::fclose(f); } }"  # noqa: E501
                 "  volatile int spin = 1; while (spin) {} }",
    },
    # Honest, but its first call forks a process that outlives the harness: one in the child's process group,
    # one that left it by setsid(). The fork's pid goes to $KS_TEST_PID_FILE.
    "leaves_process": {"ENTRY": _FORK_ONCE.replace("SETSID", "")},
    "escapes_session": {"ENTRY": _FORK_ONCE.replace("SETSID", "setsid();")},
    # The same setsid() fork, then it spins: a run to interrupt once the fork exists.
    "escapes_then_hangs": {"ENTRY": _FORK_ONCE.replace("SETSID", "setsid();") + " volatile int spin = 1; while (spin) {}"},
    # Honest until the file named by $KS_TEST_HANG_FILE exists; from then on it spins (pid to $KS_TEST_PID_FILE):
    # a run to interrupt at a chosen point of a longer command.
    "hangs_on_flag": {
        "ENTRY": "if (const char* flag = std::getenv(\"KS_TEST_HANG_FILE\")) if (access(flag, F_OK) == 0) {"
                 "  if (const char* path = std::getenv(\"KS_TEST_PID_FILE\")) {"
                 "    if (FILE* f = std::fopen(path, \"w\")) { std::fprintf(f, \"%d\\n\", (int)getpid()); std::fclose(f); } }"
                 "  volatile int spin = 1; while (spin) {} }",
    },
}


def source(kind: str) -> str:
    text = TEMPLATE
    for key, value in {**DEFAULTS, **VARIANTS[kind]}.items():
        text = text.replace(key, value)
    return text
