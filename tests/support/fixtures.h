#pragma once
// Tiny generated checkpoints and tokenizers for the test suites (fixed seeds, written to temporary
// folders by the tests themselves). The FP8 writer here is the tests' own, independent of
// core/engine/quantize, so that the engine is checked against data it did not produce.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace scalescope::testing {

// vocab.json + merges.txt of a byte-level BPE tokenizer in RoBERTa's layout: <s>=0, <pad>=1,
// </s>=2, <unk>=3, then the 256 byte symbols, then one entry per merge result, then <mask> last.
// Merges build each of `words` both bare and with the leading-space symbol "Ġ".
void writeTinyTokenizer(const std::string& dir, const std::vector<std::string>& words);

// vocab.txt + tokenizer_config.json (do_lower_case) of a WordPiece tokenizer in BERT's layout:
// [PAD]=0, [UNK]=1, [CLS]=2, [SEP]=3, [MASK]=4, then every ASCII letter, digit and punctuation
// character bare and as a "##" continuation, then `words` lower-cased.
void writeTinyWordPieceTokenizer(const std::string& dir, const std::vector<std::string>& words);

struct TinyModelSpec {
    // Roberta/Bert/XLMRoberta ForQuestionAnswering, ForMaskedLM, ForSequenceClassification, or the
    // bare RobertaModel / BertModel / XLMRobertaModel (with its pooler, which no embedding runs).
    // BERT checkpoints get the WordPiece tokenizer above, two token types and positions from 0;
    // XLM-RoBERTa ones RoBERTa's graph with the Unigram test tokenizer (tests/data/unigram, 1,093 ids).
    std::string architecture = "RobertaForQuestionAnswering";
    // ForSequenceClassification: num_labels (id2label "LABEL_i" unless labelNames are given, written
    // with string keys as transformers writes them), and problem_type ("" leaves it out).
    int numLabels = 3;
    std::vector<std::string> labelNames;
    std::string problemType;
    // A bare model's tensors without the family prefix (embeddings.*, encoder.layer.N.*), as
    // sentence-transformers saves them.
    bool bareTensorNames = false;
    // A sentence-transformers folder around a bare model: modules.json, 1_Pooling/config.json with
    // this mode ("cls", "mean", "max", "mean_sqrt_len"; "" writes no sentence-transformers files),
    // 2_Normalize when normalize, sentence_bert_config.json with maxSeqLength (0: none), and
    // config_sentence_transformers.json with the prompts.
    std::string pooling;
    bool normalize = false;
    int maxSeqLength = 0;
    std::map<std::string, std::string> prompts;
    int hiddenSize = 32;
    int numLayers = 2;
    int numHeads = 4;
    int intermediateSize = 64;
    int maxPositionEmbeddings = 130; // RoBERTa: max sequence length + 2
    uint32_t seed = 1234;
    // Input channels of every encoder Linear whose weight columns are multiplied by outlierFactor
    // (and hidden channels whose embeddings are), to make per-tensor scales suffer.
    std::vector<int> outlierChannels;
    float outlierFactor = 1.0f;
    // When larger than the tokenizer needs, the vocabulary is padded with unused tokens before
    // <mask> (benchmarks use roberta-base's 50,265).
    int vocabularySize = 0;
    // MaskedLM: store the decoder's own weight (lm_head.decoder.weight, cls.predictions.decoder.weight)
    // instead of tying it to the word embeddings; its bias stays the head's shared one
    // (lm_head.bias, cls.predictions.bias), the only name Hugging Face keeps when it saves the two tied.
    bool untiedDecoder = false;
    // Spread of the MaskedLM decoder's bias (lm_head.bias, cls.predictions.bias). A test that must
    // see the bias in the logits widens it: the default is small beside the logits' spread.
    double decoderBiasStd = 0.02;
    std::vector<std::string> words = {"the", "cat", "sat", "on", "mat", "a", "dog", "Paris", "is",
                                      "capital", "of", "France", "what", "where", "?"};
};

// Float32 checkpoint: config.json, model.safetensors and the tokenizer (vocab.json + merges.txt, or
// vocab.txt + tokenizer_config.json for BERT).
void writeTinyFloatCheckpoint(const std::string& dir, const TinyModelSpec& spec);

struct Fp8Scheme {
    // mxfp8: compressed-tensors' MXFP8 preset, format mxfp8-quantized: one U8 E8M0 scale per 32 input
    // channels of a row (weight_scale [out, in / 32], scale_dtype torch.uint8; scaleDtype is unused),
    // with activations "mxfp8" (dynamic, per 32 channels, power-of-two scales) or "none" (MXFP8A16).
    std::string weights = "channel";    // channel | tensor | block | mxfp8
    std::string activations = "token";  // token (dynamic) | tensor (static) | group (dynamic) | mxfp8 | none
    std::string scaleDtype = "F32";     // F32 | BF16 | F16
    int blockRows = 16, blockColumns = 16; // block: block_structure (partial last blocks allowed)
    int groupSize = 16;                 // group: channels per run (need not divide the width)
};

// Departures from the plain scheme, for tests that need a checkpoint with a known property.
struct Fp8Edits {
    // Encoder Linears left float (their float weights copied) and listed by name in "ignore".
    std::vector<std::string> keepFloat;
    // Planted defects: a static input_scale multiplied by this factor (0.015625 = 64x too small).
    std::map<std::string, float> inputScaleFactors;
    // Quantize the MaskedLM head's Linears too (the transform dense, and the decoder when its weight
    // is stored) and list only the head's module name ("lm_head", "cls") in "ignore", as a
    // checkpoint quantized with ignore: ["lm_head"] has it: that name matches no Linear.
    bool quantizeMaskedLmHead = false;
    // Quantize the word embeddings too, as compressed-tensors writes an Embedding: F8_E4M3 codes with
    // a weight_scale per row ("channel", shape [vocab, 1]) or per tensor ("tensor", shape [1], or []
    // with embeddingScalarScale), each amax / 448, in a group "group_1" whose only target is
    // "Embedding" (weights only). "" leaves them float.
    std::string embeddingWeights;
    bool embeddingScalarScale = false;
    // Quantize a sequence classifier's head Linears too (classifier.dense and .out_proj, BERT's
    // pooler and classifier) instead of listing them in "ignore".
    bool quantizeClassifierHead = false;
};

// Reads the float checkpoint in floatDir and writes its compressed-tensors FP8 version to fp8Dir
// (config.json with quantization_config, model.safetensors, tokenizer files copied). Encoder
// Linears are quantized; qa_outputs and the MLM head (lm_head.*, cls.*) are left in float (listed in
// "ignore") unless edits.quantizeMaskedLmHead.
// Static input scales come from the reference forward over calibrationIds.
void writeTinyFp8Checkpoint(const std::string& floatDir, const std::string& fp8Dir, const Fp8Scheme& scheme,
                            const std::vector<int64_t>& calibrationIds = {0, 5, 6, 7, 8, 9, 2},
                            const Fp8Edits& edits = {});

// How compressed-tensors 0.18 writes quantization_config (ModelCompressor.update_config, json.dump
// with sort_keys=True; QuantizationArgs.model_dump): "version", "quant_method", "sparsity_config": {},
// "transform_config" ({} without rotations), "config_groups" with a "format" per group and every
// args key (num_bits, type, symmetric, group_size, strategy, block_structure, dynamic, actorder,
// scale_dtype, zp_dtype, observer, observer_kwargs), "format", "quantization_status",
// "global_compression_ratio": null, "ignore", "kv_cache_scheme": null. Defaults as 0.18 fills them:
// observer "memoryless_minmax" for static weights, "static_minmax" for static input activations,
// null for dynamic args; zp_dtype null (its serialiser writes it only for asymmetric args); and
// "dtype" instead of "torch_dtype" (transformers >= 4.56).
struct CompressedTensors018 {
    std::string version = "0.18.0";
    std::string status = "compressed";         // "" leaves quantization_status out
    std::string transformConfigJson = "{}";    // written as given ("null", "{}", a Hadamard scheme, ...)
    std::string weightScaleDtype;              // "" writes null; "torch.bfloat16", "torch.float8_e4m3fn", ...
    std::string activationScaleDtype;          // likewise for input_activations
    bool blockStructureAsText = false;         // "16x16" instead of [16, 16]
};

// Rewrites the quantization_config of an FP8 fixture (writeTinyFp8Checkpoint) the way
// compressed-tensors 0.18 writes it, keeping its scheme, targets and ignore list; tensors untouched.
void rewriteConfigAsCompressedTensors018(const std::string& fp8Dir, const CompressedTensors018& options = {});

// Multiplies output row `row` of a float checkpoint's Linear (its weight row and its bias entry) by
// `factor`, rewriting model.safetensors: a planted outlier channel.
void scaleLinearRow(const std::string& floatDir, const std::string& module, int64_t row, float factor);

// Plants an fp16 overflow in a float checkpoint: output channel 0 of `module` is scaled so that its
// largest |value| on `ids` becomes `peak` (the float forward holds it; half does not past 65,504).
void plantOutputPeak(const std::string& floatDir, const std::string& module, const std::vector<int64_t>& ids,
                     float peak = 100000.0f);

// Rewrites every F32 tensor of a checkpoint (model.safetensors) in `dtype` ("BF16" or "F16", rounded
// to nearest even) and declares that dtype in config.json (torch_dtype "bfloat16" or "float16"): a
// 16-bit model from a float32 fixture. FP8 codes and other dtypes stay as they are.
void storeFloatTensorsAs(const std::string& dir, const std::string& dtype);

// Copies a checkpoint folder (every file) to a new folder `destinationDir` (which must not exist).
void copyCheckpoint(const std::string& sourceDir, const std::string& destinationDir);

// Rewrites one tensor of a checkpoint's model.safetensors in place of the file: `edit` gets its raw
// little-endian bytes (dtype and shape unchanged) and may change them. Throws when it is absent.
void editTensorBytes(const std::string& dir, const std::string& tensorName,
                     const std::function<void(std::vector<uint8_t>& bytes)>& edit);

// A fresh temporary folder under QDir::tempPath(), removed with everything in it when the test
// process ends.
std::string makeTempDir(const std::string& prefix);

} // namespace scalescope::testing
