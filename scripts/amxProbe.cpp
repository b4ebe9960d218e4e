// Does Intel AMX work here the way ggml's AMX kernels use it? scripts/amxBuildFlags.mjs compiles this
// with the build's compiler and flags (-march=native) and runs it; exit 0 means yes.
//
// Two things must hold, and either can fail on a CPU that advertises AMX:
// - Linux hands a process the tile data state only on request (arch_prctl ARCH_REQ_XCOMP_PERM); a
//   kernel or hypervisor that withholds it refuses the request or faults the first tile instruction.
// - ggml builds its tile configuration on the stack and loads it with _tile_loadconfig. A compiler
//   whose _tile_loadconfig declares a read of its first 8 bytes only (GCC 12's header) drops the
//   stores of the rows and column widths as dead, the tiles stay unconfigured and the first tile
//   instruction raises SIGILL. configureTiles below is written as ggml's ggml_tile_config_init is.
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>

namespace {

constexpr long kArchReqXcompPerm = 0x1023;
constexpr long kXfeatureXtiledata = 18;
constexpr int kRows = 16;
constexpr int kRowBytes = 64;

struct TileConfig {
    uint8_t paletteId;
    uint8_t startRow;
    uint8_t reserved[14];
    uint16_t columnBytes[16];
    uint8_t rows[16];
};

// Tiles 0 (int32 accumulator), 1 and 2 (int8 operands), all 16 rows of 64 bytes. Not inlined, so the
// configuration lives in a frame of its own, as in ggml's kernels.
__attribute__((noinline)) void configureTiles() {
    alignas(64) TileConfig config = {};
    config.paletteId = 1;
    config.rows[0] = kRows;
    config.columnBytes[0] = kRowBytes;
    config.rows[1] = kRows;
    config.columnBytes[1] = kRowBytes;
    config.rows[2] = kRows;
    config.columnBytes[2] = kRowBytes;
    _tile_loadconfig(&config);
}

alignas(64) int8_t left[kRows][kRowBytes];
alignas(64) int8_t right[kRows][kRowBytes];
alignas(64) int32_t product[kRows][kRowBytes / 4];

} // namespace

int main() {
    if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) {
        std::puts("the kernel refused the AMX tile data state (arch_prctl ARCH_REQ_XCOMP_PERM)");
        return 2;
    }
    for (int row = 0; row < kRows; row++) {
        for (int column = 0; column < kRowBytes; column++) {
            left[row][column] = 1;
            right[row][column] = 2;
        }
    }
    configureTiles();
    _tile_zero(0);
    _tile_loadd(1, left, kRowBytes);
    _tile_loadd(2, right, kRowBytes);
    _tile_dpbssd(0, 1, 2);
    _tile_stored(0, product, kRowBytes);
    _tile_release();
    // Each int32 of the product sums 64 products of 1 × 2.
    for (int row = 0; row < kRows; row++) {
        for (int column = 0; column < kRowBytes / 4; column++) {
            if (product[row][column] != kRowBytes * 2) {
                std::printf("an AMX int8 tile product gave %d instead of %d\n", product[row][column], kRowBytes * 2);
                return 3;
            }
        }
    }
    return 0;
}
