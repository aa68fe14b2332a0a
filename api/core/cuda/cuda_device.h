#pragma once
// The CUDA runtime beneath tensors: GPUs, their streams, memory and copies. Built only with CUDA; internal (not
// installed) and free of CUDA headers, so host code includes it without nvcc. Streams travel as void* (a
// cudaStream_t); the backend casts them back.
//
// Every piece of work on GPU i (fills, kernels, library calls, copies but uploads) is queued on stream(i), one
// compute stream per GPU, so it runs in the order it was issued; the caching allocator relies on that to reuse a
// freed block at once. Uploads from the host run on a second, copy stream, ordered after the compute work queued
// before them and before the compute work queued after them (events), so they never block the host.
#include <cstddef>
#include <string>

#include "api/core/allocator.h"
#include "api/core/device.h"

namespace tower::cuda {

// GPUs the driver reports; 0 when there is no driver or no device (that is an answer, not an error).
int device_count();
// Throws std::invalid_argument naming the device unless GPU `index` exists: "cuda:1 was asked for, but this
// machine has 1 GPU (cuda:0)", or "... no GPU is visible (<the runtime's reason>)".
void require_device(int index);
// Makes GPU `index` current on this thread (after require_device).
void set_device(int index);
// The stream of GPU `index`, created on first use.
void* stream(int index);
// Waits until every piece of work queued on GPU `index` has finished.
void synchronize(int index);
// Throws std::runtime_error("CUDA error in <what>: <message> (<error name>)") unless status is cudaSuccess.
void check(int status, const std::string& what);

// The caching allocator of GPU `index` (cudaMalloc underneath, 256-byte aligned); its private pools keep the
// memory of captured CUDA graphs.
CachingAllocator& allocator(int index);

// Memory operations for device_memory.h, queued on the GPU's stream. A copy into host memory returns once the
// bytes have arrived; a copy from host memory goes through pinned buffers on the GPU's copy stream (core/staging.h)
// and returns without waiting for the GPU, work queued after it seeing the bytes; a copy between two GPUs runs
// on the destination's stream after the work queued on the source's, and the source's stream waits for it.
// A copy into or out of host memory throws std::logic_error while the GPU's stream is being captured.
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes);
// copy_bytes from host memory to GPU `index`, the copy stream waiting only for `event` (recorded on the GPU's
// stream; one never recorded is complete) instead of for all the work queued so far. Throws std::logic_error
// while the GPU's stream is being captured.
void upload_after(void* dst, int index, const void* src, std::size_t bytes, const void* event);
// Events of GPU `index` (cudaEvent_t as void*), recorded on its stream.
void* create_event(int index);
void record_event(void* event, int index);
void destroy_event(void* event);
void fill_bytes(void* dst, int index, std::size_t bytes, unsigned char value);
void fill_floats(float* dst, int index, std::size_t n, float value);  // cuda_fill.cu

}  // namespace tower::cuda
