#pragma once
// scalescope-bench --embed: the performance point of issue 49 (embedding 1,000 short texts with a
// roberta-base-size FP8 sentence embedder, beside PyTorch eager float32 on the same machine).
#include <cstddef>
#include <string>

namespace scalescope::bench {

struct EmbedBenchOptions {
    std::string workdir; // the checkpoints are made here on the first run, and kept
    std::string output; // the JSON report
    int threads = 2;
    int repeats = 3; // rounds: every case runs once per round
    std::size_t texts = 1000;
    bool skipPeer = false;
};

// Prints the table, writes the report; 0 on success. Throws scalescope::Error as the engine does.
int runEmbedBench(const EmbedBenchOptions& options);

} // namespace scalescope::bench
