// Seed kernel for attention_cpu: attention forward in fp32, one query row at a time.
//
// Correct and deliberately simple: a single pass over the keys with a running maximum
// (online softmax), fp32 accumulation, no threads, no SIMD. Layout [batch, seq, heads, dim],
// contiguous. GQA: query head h reads kv head h / (h_q / h_kv). Causal is bottom-right
// aligned: query i sees key j when j <= i + s_k - s_q; a row that sees no key outputs zeros.
#include <cmath>
#include <cstddef>
#include <vector>

extern "C" int attention_forward(const float* q, const float* k, const float* v, float* o,
                                 int b, int s_q, int s_k, int h_q, int h_kv, int d, int causal,
                                 float scale) {
    if (b <= 0 || s_q <= 0 || s_k <= 0 || h_q <= 0 || h_kv <= 0 || d <= 0) return 1;
    if (h_q % h_kv != 0) return 2;
    const int group = h_q / h_kv;

    // Every (batch, head) pair is independent: one per thread.
    #pragma omp parallel for collapse(2) schedule(static)
    for (int bi = 0; bi < b; ++bi) {
        for (int h = 0; h < h_q; ++h) {
            std::vector<float> acc(d);
            const int hk = h / group;
            for (int i = 0; i < s_q; ++i) {
                const float* qi = q + ((static_cast<size_t>(bi) * s_q + i) * h_q + h) * d;
                float* oi = o + ((static_cast<size_t>(bi) * s_q + i) * h_q + h) * d;
                int last = causal ? i + s_k - s_q : s_k - 1;  // last visible key
                if (last > s_k - 1) last = s_k - 1;

                float running_max = -INFINITY, denom = 0.0f;
                for (int t = 0; t < d; ++t) acc[t] = 0.0f;
                for (int j = 0; j <= last; ++j) {
                    const float* kj = k + ((static_cast<size_t>(bi) * s_k + j) * h_kv + hk) * d;
                    const float* vj = v + ((static_cast<size_t>(bi) * s_k + j) * h_kv + hk) * d;
                    float s = 0.0f;
                    #pragma omp simd reduction(+ : s)
                    for (int t = 0; t < d; ++t) s += qi[t] * kj[t];
                    s *= scale;
                    if (s > running_max) {  // rescale what we have so far to the new maximum
                        const float shrink = std::exp(running_max - s);
                        denom *= shrink;
                        for (int t = 0; t < d; ++t) acc[t] *= shrink;
                        running_max = s;
                    }
                    const float w = std::exp(s - running_max);
                    denom += w;
                    for (int t = 0; t < d; ++t) acc[t] += w * vj[t];
                }
                const float inv = denom > 0.0f ? 1.0f / denom : 0.0f;  // no visible key -> zeros
                for (int t = 0; t < d; ++t) oi[t] = acc[t] * inv;
            }
        }
    }
    return 0;
}
