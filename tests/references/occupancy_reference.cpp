// NVIDIA's occupancy calculator (cuda_occupancy.h, header-only, no GPU needed)
// on configurations read from stdin, one per line:
//   major minor threadsPerSM regsPerBlock regsPerSM smemPerBlock smemPerSM
//   smemOptin reservedPerBlock  blockSize regsPerThread staticShared
// prints the active blocks per SM for each (-1 when the calculator refuses).
#include <cstdio>
#include <cuda_occupancy.h>

int main() {
    int major, minor, threadsPerSM, regsPerBlock, regsPerSM, blockSize, regs;
    long smemPerBlock, smemPerSM, smemOptin, reserved, shared;
    while (std::scanf("%d %d %d %d %d %ld %ld %ld %ld %d %d %ld", &major, &minor,
                      &threadsPerSM, &regsPerBlock, &regsPerSM, &smemPerBlock, &smemPerSM,
                      &smemOptin, &reserved, &blockSize, &regs, &shared) == 12) {
        cudaOccDeviceProp prop;
        prop.computeMajor = major;
        prop.computeMinor = minor;
        prop.maxThreadsPerBlock = 1024;
        prop.maxThreadsPerMultiprocessor = threadsPerSM;
        prop.regsPerBlock = regsPerBlock;
        prop.regsPerMultiprocessor = regsPerSM;
        prop.warpSize = 32;
        prop.sharedMemPerBlock = smemPerBlock;
        prop.sharedMemPerMultiprocessor = smemPerSM;
        prop.numSms = 1;
        prop.sharedMemPerBlockOptin = smemOptin;
        prop.reservedSharedMemPerBlock = reserved;
        cudaOccFuncAttributes attributes;
        attributes.maxThreadsPerBlock = 1024;
        attributes.numRegs = regs;
        attributes.sharedSizeBytes = shared;
        cudaOccDeviceState state;
        cudaOccResult result;
        cudaOccError status = cudaOccMaxActiveBlocksPerMultiprocessor(
            &result, &prop, &attributes, &state, blockSize, 0);
        std::printf("%d\n", status == CUDA_OCC_SUCCESS ? result.activeBlocksPerMultiprocessor : -1);
    }
    return 0;
}
