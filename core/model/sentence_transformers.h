#pragma once
// A sentence-transformers folder: modules.json lists the modules in order (the Transformer at the
// folder root, then Pooling and Normalize), 1_Pooling/config.json sets the pooling mode,
// sentence_bert_config.json the longest input, config_sentence_transformers.json the prompts
// (DESIGN.md "Encoder tasks beyond QA and fill-mask"). What they say becomes the checkpoint's
// SentenceEmbeddingConfig, which decides the embedding head's steps (model/architecture.h). No
// LibTorch; errors are scalescope::Error sentences naming the file and the problem.
#include <string>

#include "model/model_config.h"

namespace scalescope {

// The embedding a folder's sentence-transformers files describe; the defaults (CLS pooling, no
// normalization, fromModules false) when it has no modules.json.
SentenceEmbeddingConfig readSentenceEmbedding(const std::string& dir);

// The pooling a `--pooling` word names: cls, mean, max, mean_sqrt_len. Throws naming the word.
PoolingMode poolingModeFromName(const std::string& word);

} // namespace scalescope
