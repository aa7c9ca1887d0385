// How many CTAs can run at once when they come in clusters? A persistent kernel's grid is that many (next_cluster*
// launch 2 x cudaOccupancyMaxActiveClusters), so a cluster size that leaves SMs idle costs their share outright.
// Build and run on the GPU machine (repo root):
//   nvcc -std=c++17 -arch=sm_90a -o /tmp/cluster_occupancy lab/flash_attn_fwd/scripts/cluster_occupancy.cu
//   /tmp/cluster_occupancy [THREADS [SMEM_BYTES]]      (defaults: 384 threads, 230576 bytes: next_cluster3s's CTA)
// Prints the SM count and, per cluster size 1, 2, 4, 8, the clusters that fit at once and the SMs they occupy.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

__global__ void __launch_bounds__(512, 1) resident(int* p) {
  extern __shared__ int smem[];
  if (p != nullptr) p[0] = smem[threadIdx.x];
}

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 384;
  const int smem = argc > 2 ? std::atoi(argv[2]) : 230576;
  if (threads < 1 || threads > 512 || smem < 0) {
    std::fprintf(stderr, "cluster_occupancy: THREADS must be 1..512 and SMEM_BYTES >= 0\n");
    return 2;
  }
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
    std::fprintf(stderr, "cluster_occupancy: no CUDA device\n");
    return 1;
  }
  if (cudaFuncSetAttribute(resident, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess ||
      cudaFuncSetAttribute(resident, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess) {
    std::fprintf(stderr, "cluster_occupancy: %d bytes of shared memory do not fit one CTA\n", smem);
    return 1;
  }
  std::printf("%d SMs; CTA of %d threads and %d bytes of shared memory\n", sms, threads, smem);
  for (int size = 1; size <= 8; size *= 2) {
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = size;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(size);
    cfg.blockDim = dim3(threads);
    cfg.dynamicSmemBytes = smem;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    int clusters = 0;
    const cudaError_t err = cudaOccupancyMaxActiveClusters(&clusters, resident, &cfg);
    if (err != cudaSuccess) {
      std::printf("cluster size %d: %s\n", size, cudaGetErrorString(err));
      continue;
    }
    std::printf("cluster size %d: %d clusters at once, %d SMs busy, %d idle\n", size, clusters, clusters * size,
                sms - clusters * size);
  }
  return 0;
}
