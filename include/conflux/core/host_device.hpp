#pragma once
/// @file host_device.hpp
/// CONFLUX_HD marks a function that runs on the host and, where nvcc compiles it, on a CUDA
/// device too: element functions written once serve the CPU loops, the GPU kernels and the
/// host executor the GPU tests use (docs/design.md, "One model, kernels per device").

#if defined(__CUDACC__)
#define CONFLUX_HD __host__ __device__
#else
#define CONFLUX_HD
#endif
