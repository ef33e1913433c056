#pragma once
// One fuzz input through the core parsers, shared by the libFuzzer targets in this folder and by
// tests/test_fuzz_regressions.cpp, so a crashing input found by a fuzzer is replayed through exactly
// the same calls. Each function returns normally or throws scalescope::Error; any other exception
// (std::logic_error marks a broken invariant, nlohmann::json's exceptions a parser that let one
// escape), a crash or a sanitizer report is a bug in the core.
//
// Inputs that stand for several files are split on separator lines (kPartSeparator), which the
// fuzzers learn from the seed corpus. Files go to a scratch folder the caller owns.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/text_files.h"
#include "device/checkpoint_manifest.h"
#include "device/runner_protocol.h"
#include "device/runner_request.h"
#include "io/safetensors.h"
#include "model/architecture.h"
#include "model/model_config.h"
#include "model/quantization_config.h"
#include "report/check_report.h"
#include "tasks/squad_dataset.h"
#include "tasks/task_datasets.h"
#include "text/bpe_tokenizer.h"
#include "text/unigram_tokenizer.h"
#include "text/wordpiece_tokenizer.h"

namespace scalescope::fuzz {

// Runs one fuzz iteration: scalescope::Error is the clean refusal; any other exception is reported
// with its message (which std::terminate would not show) and aborts, so libFuzzer keeps the input.
template <typename Body>
int runFuzzIteration(Body body)
{
    try {
        body();
    } catch (const Error&) {
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fuzz: exception other than scalescope::Error escaped: %s\n", e.what());
        std::abort();
    }
    return 0;
}

inline const std::string kPartSeparator = "\n@@next-file@@\n";

inline std::vector<std::string> splitParts(const std::string& bytes)
{
    std::vector<std::string> parts;
    std::size_t begin = 0;
    while (true) {
        const std::size_t found = bytes.find(kPartSeparator, begin);
        if (found == std::string::npos) {
            parts.push_back(bytes.substr(begin));
            return parts;
        }
        parts.push_back(bytes.substr(begin, found - begin));
        begin = found + kPartSeparator.size();
    }
}

// Plain stdio on purpose: the scratch files are test scaffolding, not program output.
inline void writeScratchFile(const std::string& path, const std::string& bytes)
{
    std::FILE* out = std::fopen(path.c_str(), "wb");
    if (!out)
        throw std::runtime_error("fuzz harness: cannot create " + path);
    const bool ok = bytes.empty() || std::fwrite(bytes.data(), 1, bytes.size(), out) == bytes.size();
    if (std::fclose(out) != 0 || !ok)
        throw std::runtime_error("fuzz harness: cannot write " + path);
}

// A fresh scratch folder per process (fuzzers and the test may run side by side).
inline std::string makeScratchDirectory()
{
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/scalescope-fuzz-XXXXXX";
    if (!::mkdtemp(pattern.data()))
        throw std::runtime_error("fuzz harness: cannot create a scratch folder");
    return pattern;
}

// Owns a scratch folder for the life of the process; removes it and its files on the way out.
class ScratchDirectory {
public:
    ScratchDirectory() : path_(makeScratchDirectory()) {}
    ~ScratchDirectory()
    {
        if (DIR* dir = ::opendir(path_.c_str())) {
            while (const dirent* entry = ::readdir(dir)) {
                const std::string name = entry->d_name;
                if (name != "." && name != "..")
                    ::unlink(joinPath(path_, name).c_str());
            }
            ::closedir(dir);
        }
        ::rmdir(path_.c_str());
    }
    ScratchDirectory(const ScratchDirectory&) = delete;
    ScratchDirectory& operator=(const ScratchDirectory&) = delete;
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

// A byte-level vocabulary with every one of the 256 byte symbols (GPT-2's printable-byte mapping),
// RoBERTa's special tokens and a few merges: what the encode fuzzer uses when the real roberta-base
// files are absent. Written into dir as vocab.json and merges.txt.
inline void writeTinyByteLevelTokenizer(const std::string& dir)
{
    nlohmann::json vocab = nlohmann::json::object();
    int next = 0;
    for (const char* special : {"<s>", "<pad>", "</s>", "<unk>"})
        vocab[special] = next++;
    std::vector<std::string> symbols(256);
    int shifted = 256;
    for (int byte = 0; byte < 256; ++byte) {
        const bool printable = (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE;
        const int codePoint = printable ? byte : shifted++;
        std::string utf8;
        if (codePoint < 0x80) {
            utf8 += static_cast<char>(codePoint);
        } else {
            utf8 += static_cast<char>(0xC0 | (codePoint >> 6));
            utf8 += static_cast<char>(0x80 | (codePoint & 0x3F));
        }
        symbols[static_cast<std::size_t>(byte)] = utf8;
        vocab[utf8] = next++;
    }
    const std::string space = symbols[' '];
    const std::vector<std::pair<std::string, std::string>> merges = {
        {space, "t"}, {"h", "e"}, {space + "t", "he"}, {"i", "n"}, {space, "a"}, {"e", "r"}, {"o", "n"}};
    std::string mergesText = "#version: 0.2\n";
    for (const auto& [left, right] : merges) {
        vocab[left + right] = next++;
        mergesText += left + " " + right + "\n";
    }
    vocab["<mask>"] = next++;
    writeScratchFile(joinPath(dir, "vocab.json"), vocab.dump());
    writeScratchFile(joinPath(dir, "merges.txt"), mergesText);
}

inline void removeScratchFiles(const std::string& dir, const std::vector<std::string>& names)
{
    for (const std::string& name : names)
        ::unlink(joinPath(dir, name).c_str());
}

inline void check(bool condition, const std::string& what)
{
    if (!condition)
        throw std::logic_error("invariant broken: " + what);
}

inline void exerciseTensors(const TensorStore& store)
{
    std::size_t bytes = 0;
    for (const TensorView* view : store.tensors()) {
        check(store.find(view->name) == view, "TensorStore::find returns the listed view");
        check(&store.require(view->name) == view, "TensorStore::require returns the listed view");
        check(static_cast<uint64_t>(view->numel()) * dtypeSize(view->dtype) == view->byteSize,
              "a tensor's byte size is numel x dtype size");
        // Reads every byte of the tensor, so a view outside its mapping shows up under ASan.
        const FloatTensor values = view->toFloat();
        check(values.values.size() == static_cast<std::size_t>(view->numel()), "toFloat yields numel values");
        bytes += view->byteSize;
    }
    // Shards may hold tensors the index does not list: mapped, counted, but not reachable by name.
    check(bytes <= store.mappedBytes(), "mappedBytes counts at least the reachable tensors' bytes");
}

// First byte even: the rest is one .safetensors file. Odd: the rest is
// "index json <sep> shard 1 <sep> shard 2 ...", the shards named model-0000N.safetensors.
inline void runSafetensorsInput(const std::string& input, const std::string& scratchDir)
{
    if (input.empty())
        return;
    static const std::vector<std::string> names = {
        "model.safetensors", "model.safetensors.index.json", "model-00001.safetensors",
        "model-00002.safetensors", "model-00003.safetensors"};
    removeScratchFiles(scratchDir, names);
    const std::string payload = input.substr(1);
    if ((static_cast<unsigned char>(input[0]) & 1) == 0) {
        const std::string path = joinPath(scratchDir, "model.safetensors");
        writeScratchFile(path, payload);
        const std::unique_ptr<TensorStore> store = TensorStore::openFile(path);
        exerciseTensors(*store);
        return;
    }
    const std::vector<std::string> parts = splitParts(payload);
    writeScratchFile(joinPath(scratchDir, "model.safetensors.index.json"), parts[0]);
    for (std::size_t i = 1; i < parts.size() && i <= 3; ++i)
        writeScratchFile(joinPath(scratchDir, "model-0000" + std::to_string(i) + ".safetensors"), parts[i]);
    const std::unique_ptr<TensorStore> store = TensorStore::openDirectory(scratchDir);
    exerciseTensors(*store);
}

inline void exerciseQuantizationConfig(const QuantizationConfig& config)
{
    static const char* const modules[] = {
        "roberta.encoder.layer.0.attention.self.query", "roberta.encoder.layer.11.output.dense",
        "roberta.encoder.layer.3.intermediate.dense", "qa_outputs", "lm_head.dense", "lm_head.decoder"};
    for (const char* module : modules) {
        const ConfigGroup* group = findGroupFor(config, module, "Linear");
        if (group) {
            (void)unsupportedSchemeReason(config, *group);
            (void)describeScheme(*group);
        }
    }
    for (const ConfigGroup& group : config.groups) {
        (void)unsupportedSchemeReason(config, group);
        (void)describeScheme(group);
        for (const auto* args : {&group.weights, &group.inputActivations, &group.outputActivations})
            if (*args) {
                (void)argsSummaryJson(**args).size();
                (void)describeArgsExtras(**args);
            }
    }
    if (const auto refusal = transformRefusal(config))
        check(refusal->size() < 4096, "the transform_config sentence stays bounded");
}

// The text is a config.json, read through loadModelConfig as a checkpoint's is. Its
// quantization_config (or, when it has none, the whole text) also goes through
// parseQuantizationConfig on its own, so the fuzzer reaches the quantization parser without first
// satisfying every model-size check.
inline void runConfigInput(const std::string& text, const std::string& scratchDir)
{
    const std::string path = joinPath(scratchDir, "config.json");
    writeScratchFile(path, text);
    const nlohmann::json root = readJsonFile(path);
    try {
        const nlohmann::json* quantization = &root;
        if (root.is_object() && root.contains("quantization_config"))
            quantization = &root["quantization_config"];
        exerciseQuantizationConfig(parseQuantizationConfig(*quantization, path));
    } catch (const Error&) {
    }
    const ModelConfig config = loadModelConfig(path);
    check(config.vocabSize > 0 && config.hiddenSize > 0 && config.numLayers > 0 && config.numHeads > 0,
          "parseModelConfig accepts only positive sizes");
    check(config.hiddenSize % config.numHeads == 0, "hidden_size is a multiple of num_attention_heads");
    check(config.padTokenId >= 0 && config.padTokenId < config.vocabSize, "pad_token_id is inside the vocabulary");
    check(!config.architecture.family->positionsAfterPad || config.padTokenId + 1 < config.maxPositionEmbeddings,
          "positions after pad_token_id leave at least one token position");
    if (config.quantization)
        exerciseQuantizationConfig(*config.quantization);
}

// Properties every encoding has, whatever the vocabulary: ids inside it, one offset and one
// sequence id per token, offsets inside their text. Byte-level BPE is lossless, so when every byte
// has a symbol in the vocabulary and the text holds no <mask> (whose left whitespace is stripped),
// decoding gives the text back byte for byte.
inline void checkEncoding(const BpeTokenizer& tokenizer, const Encoding& encoding, const std::string& first,
                          const std::string* second, bool losslessVocabulary)
{
    check(encoding.ids.size() == encoding.offsets.size() && encoding.ids.size() == encoding.sequenceIds.size(),
          "ids, offsets and sequence ids have one entry per token");
    const int firstLength = codePointCount(first);
    const int secondLength = second ? codePointCount(*second) : 0;
    std::string firstText;
    std::string secondText;
    for (std::size_t i = 0; i < encoding.ids.size(); ++i) {
        const int64_t id = encoding.ids[i];
        check(id >= 0 && id < tokenizer.vocabSize(), "token ids are inside the vocabulary");
        const auto [start, end] = encoding.offsets[i];
        const int sequence = encoding.sequenceIds[i];
        check(sequence >= -1 && sequence <= (second ? 1 : 0), "sequence ids are -1, 0 or 1");
        if (sequence < 0) {
            check(start == 0 && end == 0, "special tokens have offsets (0, 0)");
            continue;
        }
        const int length = sequence == 0 ? firstLength : secondLength;
        check(0 <= start && start <= end && end <= length, "offsets lie inside their text");
        (sequence == 0 ? firstText : secondText) += tokenizer.decode({id}, false);
    }
    if (!losslessVocabulary)
        return;
    if (first.find("<mask>") == std::string::npos)
        check(firstText == first, "decoding the tokens of a text gives the text back");
    if (second && second->find("<mask>") == std::string::npos)
        check(secondText == *second, "decoding the tokens of the second text gives it back");
}

// First byte: 0 encodeText, 1 encode, 2 encodePair (the rest split at its middle).
inline void runTokenizerEncodeInput(const BpeTokenizer& tokenizer, const std::string& input, bool losslessVocabulary)
{
    if (input.empty())
        return;
    const std::string text = input.substr(1);
    switch (static_cast<unsigned char>(input[0]) % 3) {
    case 0:
        checkEncoding(tokenizer, tokenizer.encodeText(text), text, nullptr, losslessVocabulary);
        break;
    case 1: {
        const Encoding encoding = tokenizer.encode(text);
        check(encoding.ids.size() >= 2 && encoding.ids.front() == tokenizer.bosId() &&
                  encoding.ids.back() == tokenizer.eosId(),
              "encode wraps the text in <s> ... </s>");
        checkEncoding(tokenizer, encoding, text, nullptr, losslessVocabulary);
        break;
    }
    default: {
        const std::string first = text.substr(0, text.size() / 2);
        const std::string second = text.substr(text.size() / 2);
        checkEncoding(tokenizer, tokenizer.encodePair(first, second), first, &second, losslessVocabulary);
        break;
    }
    }
}

// First byte even: the rest is "vocab.json <sep> merges.txt <sep> text to encode"; odd:
// "tokenizer.json <sep> text to encode". A tokenizer that loads encodes the text and decodes every id.
inline void runTokenizerFilesInput(const std::string& input, const std::string& scratchDir)
{
    if (input.empty())
        return;
    removeScratchFiles(scratchDir, {"vocab.json", "merges.txt", "tokenizer.json"});
    const std::vector<std::string> parts = splitParts(input.substr(1));
    std::unique_ptr<BpeTokenizer> tokenizer;
    std::string text;
    if ((static_cast<unsigned char>(input[0]) & 1) == 0) {
        const std::string vocabPath = joinPath(scratchDir, "vocab.json");
        const std::string mergesPath = joinPath(scratchDir, "merges.txt");
        writeScratchFile(vocabPath, parts[0]);
        writeScratchFile(mergesPath, parts.size() > 1 ? parts[1] : std::string());
        text = parts.size() > 2 ? parts[2] : "Hello world <mask>!";
        tokenizer = BpeTokenizer::loadFromFiles(vocabPath, mergesPath);
    } else {
        const std::string path = joinPath(scratchDir, "tokenizer.json");
        writeScratchFile(path, parts[0]);
        text = parts.size() > 1 ? parts[1] : "Hello world <mask>!";
        tokenizer = BpeTokenizer::loadFromTokenizerJson(path);
    }
    check(tokenizer->vocabSize() > 0, "a loaded tokenizer has a vocabulary");
    for (const int64_t id : {tokenizer->bosId(), tokenizer->eosId(), tokenizer->padId(), tokenizer->unkId(),
                             tokenizer->maskId()})
        check(id >= 0 && id < tokenizer->vocabSize(), "special token ids are inside the vocabulary");
    checkEncoding(*tokenizer, tokenizer->encode(text), text, nullptr, false);
    for (int64_t id = 0; id < tokenizer->vocabSize() && id < 4096; ++id) {
        try {
            (void)tokenizer->tokenString(id);
            (void)tokenizer->tokenText(id);
        } catch (const Error&) {
            // ids the vocabulary skips are reported, not crashed on
        }
    }
}

// Properties of every WordPiece encoding: parallel lists, ids inside the vocabulary, the added
// [CLS]/[SEP] at (0, 0), offsets inside their own text, type id 1 exactly on the second text and
// its closing [SEP].
inline void checkWordPieceEncoding(const Tokenizer& tokenizer, const Encoding& encoding, const std::string& first,
                                   const std::string* second)
{
    const std::size_t count = encoding.ids.size();
    check(count == encoding.offsets.size() && count == encoding.sequenceIds.size() && count == encoding.typeIds.size(),
          "ids, offsets, sequence ids and type ids have one entry per token");
    check(count >= static_cast<std::size_t>(second ? tokenizer.specialTokensInPair() : tokenizer.specialTokensInSingle()),
          "an encoding holds at least its special tokens");
    check(encoding.ids.front() == tokenizer.clsId() && encoding.ids.back() == tokenizer.sepId(),
          "an encoding starts with [CLS] and ends with [SEP]");
    const int firstLength = codePointCount(first);
    const int secondLength = second ? codePointCount(*second) : 0;
    for (std::size_t i = 0; i < count; ++i) {
        check(encoding.ids[i] >= 0 && encoding.ids[i] < tokenizer.vocabSize(), "token ids are inside the vocabulary");
        const int sequence = encoding.sequenceIds[i];
        const auto [start, end] = encoding.offsets[i];
        if (sequence < 0) {
            check(start == 0 && end == 0, "added special tokens have offsets (0, 0)");
        } else {
            check(0 <= start && start <= end && end <= (sequence == 0 ? firstLength : secondLength),
                  "offsets lie inside their text");
            check(encoding.typeIds[i] == sequence, "text tokens carry their sequence's type id");
        }
    }
    check(encoding.typeIds.back() == (second ? 1 : 0), "the closing [SEP] carries the last text's type id");
    (void)tokenizer.decode(encoding.ids, true);
    (void)tokenizer.decode(encoding.ids, false);
}

// First byte even: the rest is "vocab.txt <sep> tokenizer_config.json <sep> text" (an empty
// config part means no tokenizer_config.json); odd: "tokenizer.json <sep> text". A tokenizer that
// loads encodes the text alone and as a pair with itself.
inline void runWordPieceFilesInput(const std::string& input, const std::string& scratchDir)
{
    if (input.empty())
        return;
    removeScratchFiles(scratchDir, {"vocab.txt", "tokenizer_config.json", "tokenizer.json"});
    const std::vector<std::string> parts = splitParts(input.substr(1));
    std::unique_ptr<WordPieceTokenizer> tokenizer;
    std::string text;
    if ((static_cast<unsigned char>(input[0]) & 1) == 0) {
        const std::string vocabPath = joinPath(scratchDir, "vocab.txt");
        writeScratchFile(vocabPath, parts[0]);
        std::string configPath;
        if (parts.size() > 1 && !parts[1].empty()) {
            configPath = joinPath(scratchDir, "tokenizer_config.json");
            writeScratchFile(configPath, parts[1]);
        }
        text = parts.size() > 2 ? parts[2] : "Hello world [MASK]!";
        tokenizer = WordPieceTokenizer::loadFromVocabTxt(vocabPath, configPath);
    } else {
        const std::string path = joinPath(scratchDir, "tokenizer.json");
        writeScratchFile(path, parts[0]);
        text = parts.size() > 1 ? parts[1] : "Hello world [MASK]!";
        tokenizer = WordPieceTokenizer::loadFromTokenizerJson(path);
    }
    check(tokenizer->vocabSize() > 0, "a loaded tokenizer has a vocabulary");
    for (const int64_t id : {tokenizer->clsId(), tokenizer->sepId(), tokenizer->padId(), tokenizer->unkId(),
                             tokenizer->maskId()})
        check(id >= 0 && id < tokenizer->vocabSize(), "special token ids are inside the vocabulary");
    checkWordPieceEncoding(*tokenizer, tokenizer->encode(text), text, nullptr);
    checkWordPieceEncoding(*tokenizer, tokenizer->encodePair(text, text), text, &text);
}

// Unigram tokenizer loading (XLM-RoBERTa): the first byte's low bit chooses a
// sentencepiece.bpe.model (parts[0], its ModelProto bytes) or a tokenizer.json (parts[0]); parts[1]
// is the text, encoded alone and as a pair with itself. The precompiled_charsmap's trie, read from
// untrusted bytes, is where an index could run out of bounds.
inline void runUnigramFilesInput(const std::string& input, const std::string& scratchDir)
{
    if (input.empty())
        return;
    removeScratchFiles(scratchDir, {"sentencepiece.bpe.model", "tokenizer.json"});
    const std::vector<std::string> parts = splitParts(input.substr(1));
    const bool model = (static_cast<unsigned char>(input[0]) & 1) == 0;
    const std::string path = joinPath(scratchDir, model ? "sentencepiece.bpe.model" : "tokenizer.json");
    writeScratchFile(path, parts[0]);
    const std::string text = parts.size() > 1 ? parts[1] : "Hello w\xc3\xb6rld <mask> \xef\xac\x81!";
    const std::unique_ptr<UnigramTokenizer> tokenizer
        = model ? UnigramTokenizer::loadFromSentencePieceModel(path) : UnigramTokenizer::loadFromTokenizerJson(path);
    check(tokenizer->vocabSize() > 0, "a loaded tokenizer has a vocabulary");
    for (const int64_t id :
        {tokenizer->clsId(), tokenizer->sepId(), tokenizer->padId(), tokenizer->unkId(), tokenizer->maskId()})
        check(id >= 0 && id < tokenizer->vocabSize(), "special token ids are inside the vocabulary");
    const int length = codePointCount(text);
    for (const Encoding& encoding : {tokenizer->encode(text), tokenizer->encodePair(text, text)}) {
        check(encoding.offsets.size() == encoding.ids.size() && encoding.typeIds.size() == encoding.ids.size(),
            "encoding lists are parallel");
        for (std::size_t i = 0; i < encoding.ids.size(); ++i) {
            check(encoding.ids[i] >= 0 && encoding.ids[i] < tokenizer->vocabSize(), "ids are inside the vocabulary");
            check(encoding.offsets[i].first >= 0 && encoding.offsets[i].first <= encoding.offsets[i].second
                    && encoding.offsets[i].second <= length,
                "offsets are inside the text");
        }
        (void)tokenizer->decode(encoding.ids);
    }
}

// A thresholds file (check --thresholds) through the JSON reader and thresholdsFromJson, then
// written and read back: what was accepted must survive its own round trip.
inline void runThresholdsInput(const std::string& text, const std::string& scratchDir)
{
    const std::string path = joinPath(scratchDir, "thresholds.json");
    writeScratchFile(path, text);
    const ThresholdSet set = readThresholdsFile(path);
    check(!set.points.empty(), "accepted thresholds name a point");
    const ThresholdSet again = thresholdsFromJson(thresholdsJson(set), "fuzz/round-trip.json");
    check(again.points.size() == set.points.size(), "the round trip keeps every point");
    for (std::size_t p = 0; p < set.points.size(); ++p) {
        check(again.points[p].point == set.points[p].point, "the round trip keeps point names");
        for (std::size_t m = 0; m < kCheckMetricCount; ++m) {
            const double a = set.points[p].thresholds[m], b = again.points[p].thresholds[m];
            check((a != a && b != b) || a == b, "the round trip keeps every threshold");
        }
    }
}

inline void runSquadInput(const std::string& text)
{
    const SquadDataset dataset = parseSquadJson(text, "fuzz/squad.json");
    check(!dataset.examples.empty(), "a parsed SQuAD file has questions");
    for (const SquadExample& example : dataset.examples) {
        check(!example.id.empty(), "every question has an id");
        check(example.isImpossible == example.golds.empty(), "unanswerable means no gold answers");
    }
}

// Removes the files and the qrels folder of a BEIR input (ScratchDirectory removes plain files
// only), on every way out of an iteration, so no file of one input is read with the next.
struct BeirScratchCleanup {
    std::string dir;
    ~BeirScratchCleanup()
    {
        removeScratchFiles(dir, {"corpus.jsonl", "queries.jsonl"});
        removeScratchFiles(joinPath(dir, "qrels"), {"test.tsv"});
        ::rmdir(joinPath(dir, "qrels").c_str());
    }
};

// Properties of a BEIR folder that reads: judged queries only, document indices inside the corpus,
// and metrics inside their ranges for a ranking by corpus order.
inline void checkBeirDataset(const BeirDataset& dataset)
{
    check(!dataset.corpus.empty() && !dataset.queries.empty(), "a BEIR folder that reads has documents and queries");
    std::vector<std::vector<double>> scores;
    std::vector<QueryQrels> qrels;
    for (const BeirQuery& query : dataset.queries) {
        check(query.qrels.judged(), "only judged queries are kept");
        for (const auto& [document, grade] : query.qrels.grades)
            check(document < dataset.corpus.size(), "qrels point inside the corpus");
        scores.emplace_back(dataset.corpus.size(), 0.0); // all tied: corpus order
        qrels.push_back(query.qrels);
    }
    const RetrievalMetrics metrics = retrievalMetrics(scores, qrels);
    check(metrics.queriesEvaluated == dataset.queries.size(), "every kept query is evaluated");
    for (const double value : {metrics.ndcgAt10, metrics.mrrAt10, metrics.recallAt100})
        check(value >= 0 && value <= 1 + 1e-12, "retrieval metrics lie in [0, 1]");
}

// First byte: 0 a texts file, 1 an STS file, 2 a classification file (labels "neg", "pos"), 3 a
// BEIR folder "corpus.jsonl <sep> queries.jsonl <sep> qrels/test.tsv"; the second byte's low bits
// are maxSamples (0: all). Files go through the readers' path-taking entry points.
inline void runTaskDatasetsInput(const std::string& input, const std::string& scratchDir)
{
    if (input.size() < 2)
        return;
    const std::size_t maxSamples = static_cast<unsigned char>(input[1]) % 4;
    const std::string payload = input.substr(2);
    const std::string path = joinPath(scratchDir, "task_input");
    switch (static_cast<unsigned char>(input[0]) % 4) {
    case 0: {
        writeScratchFile(path, payload);
        const TextsFile file = readTextsFile(path, maxSamples);
        check(!file.texts.empty() && file.texts.size() == file.lines.size(), "a texts file has texts, each with its line");
        check(file.inFile >= file.texts.size() && (maxSamples == 0 || file.texts.size() <= maxSamples),
              "maxSamples keeps the first texts");
        break;
    }
    case 1: {
        writeScratchFile(path, payload);
        const StsDataset dataset = readStsFile(path, maxSamples);
        check(!dataset.pairs.empty(), "an STS file has pairs");
        for (const StsPair& pair : dataset.pairs)
            check(std::isfinite(pair.score), "STS scores are finite");
        break;
    }
    case 2: {
        writeScratchFile(path, payload);
        const ClassificationDataset dataset = readClassificationFile(path, {"neg", "pos"}, maxSamples);
        check(!dataset.examples.empty(), "a classification file has rows");
        for (const ClassificationExample& example : dataset.examples)
            check(example.label.has_value() == dataset.hasLabels && (!example.label || *example.label < 2),
                  "labels are all there or all absent, and inside the model's labels");
        break;
    }
    default: {
        const BeirScratchCleanup cleanup{scratchDir};
        const std::vector<std::string> parts = splitParts(payload);
        writeScratchFile(joinPath(scratchDir, "corpus.jsonl"), parts[0]);
        if (parts.size() > 1)
            writeScratchFile(joinPath(scratchDir, "queries.jsonl"), parts[1]);
        if (parts.size() > 2) {
            ::mkdir(joinPath(scratchDir, "qrels").c_str(), 0700);
            writeScratchFile(joinPath(joinPath(scratchDir, "qrels"), "test.tsv"), parts[2]);
        }
        checkBeirDataset(readBeirFolder(scratchDir, maxSamples));
    }
    }
}

// The runner fuzzer reads lines with this bound instead of the protocol's 64 MiB, so that inputs of
// a fuzzer's size reach the too-long path as well.
constexpr std::size_t kFuzzRunnerMaxLineBytes = 1024;

// One request's fields through its op's parser, as core/engine/runner_server reads them before
// anything runs; `protocol` follows hello as the server's does.
inline void exerciseRunnerRequest(const RequestLine& parsed, int& protocol)
{
    const nlohmann::json& request = parsed.request;
    const std::string op = requestOp(request);
    if (!parsed.integerOutOfRange.empty()) {
        check(parsed.integerOutOfRange.size() <= 40, "an out-of-range integer is quoted in at most 40 characters");
        return; // the server refuses the request there
    }
    if (op == "hello") {
        protocol = negotiatedProtocol(request);
        check(protocol == 1 || protocol == 2, "hello settles on protocol 1 or 2");
    } else if (op == "load") {
        const LoadRequest load = parseLoadRequest(request);
        check(load.hash.empty() != load.checkpoint.empty(), "a load names a checkpoint by hash or by folder");
    } else if (op == "upload") {
        const UploadRequest upload = parseUploadRequest(request, parsed.payload.has_value());
        check(isSafeManifestName(upload.name), "an upload's name is a plain file name");
        check(upload.hash.size() == 64 && upload.sha256.size() == 64, "an upload carries two hashes");
    } else if (op == "has_checkpoint" || op == "commit_checkpoint") {
        check(requireRequestHash(request, op).size() == 64, "a hash has 64 digits");
        if (op == "commit_checkpoint")
            (void)requireRequestField(request, "files", op);
    } else if (op == "forward") {
        const ForwardRequest forward = parseForwardRequest(request, protocol);
        const EncoderInputs& inputs = forward.inputs;
        std::size_t longest = 0;
        for (const std::vector<int64_t>& row : inputs.inputIds) {
            longest = std::max(longest, row.size());
            for (const int64_t id : row)
                check(id >= 0, "token ids are non-negative");
        }
        for (const auto& [row, position] : inputs.logitPositions)
            check(row >= 0 && static_cast<std::size_t>(row) < inputs.inputIds.size() && position >= 0 &&
                      static_cast<std::size_t>(position) < longest,
                  "logit positions lie inside the input");
        check((protocol < 2) != forward.output.empty(), "protocol 1 names an output file, protocol 2 none");
        check(!(forward.capture.all && !forward.capture.names.empty()), "capture is \"all\" or a list");
    }
}

// The bytes are what a client writes to a runner's stdin: request lines, each followed by the
// payload it announces. Each line goes through the runner's reading of a request
// (parseRequestLine) and each request's fields through its op's parser; a payload is skipped as
// the server reads it, and the input stops where the server would stop reading.
inline void runRunnerRequestInput(const std::string& bytes)
{
    std::istringstream in(bytes);
    std::string line;
    int protocol = 1;
    while (true) {
        const LineRead read = readProtocolLine(in, line, kFuzzRunnerMaxLineBytes);
        if (read != LineRead::Line)
            return;
        check(line.size() <= kFuzzRunnerMaxLineBytes, "a line read is within its bound");
        const RequestLine parsed = parseRequestLine(line);
        switch (parsed.kind) {
        case RequestLine::Kind::Blank:
            continue;
        case RequestLine::Kind::StopReading:
            check(!parsed.sentence.empty() && parsed.sentence.size() < 200, "a framing error is one short sentence");
            (void)parsed.id.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
            return;
        case RequestLine::Kind::NotAnObject:
            check(parsed.id.is_null(), "a request that is not an object has no id");
            continue;
        case RequestLine::Kind::Request:
            break;
        }
        check(parsed.request.is_object(), "a request is a JSON object");
        (void)parsed.id.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        try {
            exerciseRunnerRequest(parsed, protocol);
        } catch (const Error& e) {
            check(std::string(e.what()).size() < 400, "a refusal is one short sentence");
        }
        if (parsed.payload) {
            // istream::ignore takes a signed count; "bytes" is at most 2^63 - 1, so it fits.
            in.ignore(static_cast<std::streamsize>(*parsed.payload));
            if (static_cast<uint64_t>(in.gcount()) < *parsed.payload)
                return; // the input ended inside the payload: the server stops reading
        }
    }
}

} // namespace scalescope::fuzz
