#ifndef STREAMREG_SERVER_CMD_ALLOCATOR_TUNING_H_
#define STREAMREG_SERVER_CMD_ALLOCATOR_TUNING_H_

namespace streamreg {

// Sets glibc malloc up for a long-running server whose models build and
// drop large structures (index rebuilds, snapshots) on several threads:
// allocations from 256 KiB up are mapped on their own and given back to
// the system when freed (glibc otherwise raises that threshold as large
// blocks are freed, and then keeps such blocks in its arenas after they
// are freed). Measured on 3·10^5 robot samples (bench/README.md): resident
// size 735 MB → 352 MB for a model whose own structures take 232 MB (at
// most two arenas on top: 346 MB, not worth the lock contention). Call
// first thing in main.
void TuneAllocatorForServer();

}  // namespace streamreg

#endif  // STREAMREG_SERVER_CMD_ALLOCATOR_TUNING_H_
