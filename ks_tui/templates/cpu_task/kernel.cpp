// Seed kernel for {name}: out[i] = alpha * x[i] + y[i] over n floats.
//
// Correct and simple on purpose: one loop, no threads. Returns 0 on success and non-zero
// for arguments it cannot handle (the harness reports that as an unsupported shape).
#include <cstdint>

extern "C" int scale_add(const float* x, const float* y, float* out, int64_t n, float alpha) {
    if (n < 0) return 1;
    for (int64_t i = 0; i < n; ++i) out[i] = alpha * x[i] + y[i];
    return 0;
}
