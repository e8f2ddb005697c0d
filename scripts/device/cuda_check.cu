// The CUDA check of scripts/device/gpu-e2e.sh, built on the GPU machine with its nvcc and linked
// statically against the CUDA runtime (-cudart static): the container's root holds only this
// program and glibc, so libcuda.so.1 and nvidia-smi can only come from xpu-dra's CDI spec. Prints
// one JSON object: cuInit, the visible devices and their UUIDs, a small kernel's result, and
// `nvidia-smi -L` as the container sees it. `--load SECONDS` instead multiplies matrices on device
// 0 for that long (the telemetry step's load) and prints what it did.
#include <cuda.h>
#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

__global__ void AddOne(int* v, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] += i + 1;
}

__global__ void MatMul(const float* a, const float* b, float* c, int n) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= n || col >= n) return;
  float sum = 0;
  for (int k = 0; k < n; ++k) sum += a[row * n + k] * b[k * n + col];
  c[row * n + col] = sum;
}

std::string Escape(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') { out += "\\n"; continue; }
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
}

// The program's stdout and stderr: the container has no shell, so no popen.
std::string Run(const char* path, const char* arg) {
  int fds[2];
  if (pipe(fds) != 0) return "(pipe failed)";
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    execl(path, path, arg, static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  std::string out;
  char buf[256];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) out += "(exit " + std::to_string(WEXITSTATUS(status)) + ")";
  return out;
}

int Load(int seconds) {
  const int n = 2048;
  float *a = nullptr, *b = nullptr, *c = nullptr;
  if (cudaMalloc(&a, sizeof(float) * n * n) != cudaSuccess || cudaMalloc(&b, sizeof(float) * n * n) != cudaSuccess ||
      cudaMalloc(&c, sizeof(float) * n * n) != cudaSuccess) {
    std::printf("{\"load\": false, \"error\": \"cudaMalloc\"}\n");
    return 1;
  }
  cudaMemset(a, 0, sizeof(float) * n * n);
  cudaMemset(b, 0, sizeof(float) * n * n);
  const dim3 block(16, 16), grid(n / 16, n / 16);
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  long launches = 0;
  while (std::chrono::steady_clock::now() < end) {
    MatMul<<<grid, block>>>(a, b, c, n);
    cudaDeviceSynchronize();
    ++launches;
  }
  std::printf("{\"load\": true, \"seconds\": %d, \"matmuls\": %ld, \"n\": %d}\n", seconds, launches, n);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--load") == 0) return Load(std::atoi(argv[2]));
  const CUresult init = cuInit(0);
  int count = 0;
  if (init == CUDA_SUCCESS) cuDeviceGetCount(&count);
  std::string uuids;
  for (int i = 0; i < count; ++i) {
    CUdevice dev;
    CUuuid u;
    if (cuDeviceGet(&dev, i) != CUDA_SUCCESS || cuDeviceGetUuid(&u, dev) != CUDA_SUCCESS) continue;
    char text[64];
    const unsigned char* b = reinterpret_cast<const unsigned char*>(u.bytes);
    std::snprintf(text, sizeof text,
                  "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                  b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                  b[14], b[15]);
    uuids += std::string(uuids.empty() ? "" : ",") + "\"" + text + "\"";
  }
  // A small kernel: v[i] = 0 + i + 1, checked on the host.
  const int n = 1024;
  int* d = nullptr;
  bool kernel_ok = false;
  std::string kernel_error;
  if (cudaMalloc(&d, n * sizeof(int)) == cudaSuccess) {
    cudaMemset(d, 0, n * sizeof(int));
    AddOne<<<(n + 255) / 256, 256>>>(d, n);
    int host[n];
    const cudaError_t rc = cudaMemcpy(host, d, sizeof host, cudaMemcpyDeviceToHost);
    kernel_ok = rc == cudaSuccess;
    for (int i = 0; kernel_ok && i < n; ++i) kernel_ok = host[i] == i + 1;
    if (rc != cudaSuccess) kernel_error = cudaGetErrorString(rc);
    cudaFree(d);
  } else {
    kernel_error = cudaGetErrorString(cudaGetLastError());
  }
  std::printf(
      "{\"cuInit\": %d, \"deviceCount\": %d, \"uuids\": [%s], \"kernelOk\": %s, \"kernelError\": "
      "\"%s\", \"nvidiaSmi\": \"%s\"}\n",
      static_cast<int>(init), count, uuids.c_str(), kernel_ok ? "true" : "false",
      Escape(kernel_error).c_str(), Escape(Run("/usr/bin/nvidia-smi", "-L")).c_str());
  return init == CUDA_SUCCESS && kernel_ok ? 0 : 1;
}
