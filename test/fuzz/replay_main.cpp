// Runs a fuzz target's entry point without libFuzzer: on the files named on the command line (a
// corpus, a crash to reproduce), then on pseudo-random inputs for --seconds N (default 2) from
// --seed S. Built with any compiler, so the default test run exercises the fuzz targets too.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char** argv)
{
    double seconds = 2;
    unsigned seed = 1;
    std::size_t runs = 0, files = 0;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) seconds = std::atof(argv[++i]);
        else if (std::strcmp(argv[i], "--seed") == 0 && i + 1 < argc) seed = static_cast<unsigned>(std::atol(argv[++i]));
        else {
            std::ifstream f(argv[i], std::ios::binary);
            std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
            LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
            ++files;
        }
    }
    std::mt19937_64 rng(seed);
    // Inputs mixing random bytes with the characters the targets care about.
    static const char alphabet[] = "/x-rs0123456789abcdef:.,[]\n \x01\x7f\xff";
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    std::vector<std::uint8_t> buf;
    while (std::chrono::steady_clock::now() < deadline) {
        for (int k = 0; k < 256; ++k, ++runs) {
            buf.resize(rng() % 600);
            const bool structured = rng() % 2;
            for (auto& b : buf)
                b = structured ? static_cast<std::uint8_t>(alphabet[rng() % (sizeof alphabet - 1)])
                               : static_cast<std::uint8_t>(rng());
            LLVMFuzzerTestOneInput(buf.data(), buf.size());
        }
    }
    std::printf("replayed %zu file(s) and %zu random inputs (seed %u)\n", files, runs, seed);
    return 0;
}
