#pragma once
// A sentence-transformers folder: modules.json lists the modules in order (the Transformer at the
// folder root, then Pooling and Normalize), 1_Pooling/config.json sets the pooling mode,
// sentence_bert_config.json the longest input, config_sentence_transformers.json the prompts
// (DESIGN.md "Encoder tasks beyond QA and fill-mask"). What they say becomes the checkpoint's
// SentenceEmbeddingConfig, which decides the embedding head's steps (model/architecture.h). No
// LibTorch; errors are scalescope::Error sentences naming the file and the problem.
#include <string>
#include <vector>

#include "model/model_config.h"

namespace scalescope {

// The embedding a folder's sentence-transformers files describe; the defaults (CLS pooling, no
// normalization, fromModules false) when it has no modules.json.
SentenceEmbeddingConfig readSentenceEmbedding(const std::string& dir);

// The sentence-transformers files a copy of the checkpoint must carry, relative to the folder:
// modules.json, sentence_bert_config.json, config_sentence_transformers.json, and every module
// folder modules.json names with the files in it ("1_Pooling/config.json"; "2_Normalize/" for a
// module folder without files). Empty for a folder without modules.json.
std::vector<std::string> sentenceTransformersFiles(const std::string& dir);
// Copies them from one checkpoint folder into another (quantize's and keep-float's new folders),
// creating the module folders; files already there are replaced.
void copySentenceTransformersFiles(const std::string& fromDir, const std::string& toDir);

// The pooling a `--pooling` word names: cls, mean, max, mean_sqrt_len. Throws naming the word.
PoolingMode poolingModeFromName(const std::string& word);

} // namespace scalescope
