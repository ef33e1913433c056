#include "model/sentence_transformers.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "common/error.h"
#include "common/json_values.h"
#include "common/text_files.h"

namespace scalescope {
namespace {

constexpr const char* kTransformerType = "sentence_transformers.models.Transformer";
constexpr const char* kPoolingType = "sentence_transformers.models.Pooling";
constexpr const char* kNormalizeType = "sentence_transformers.models.Normalize";

// 1_Pooling/config.json: exactly one of the four modes ScaleScope runs. sentence-transformers
// would concatenate several modes into one longer vector; no checkpoint this tool serves does that,
// so it is refused rather than silently pooled one way.
PoolingMode readPoolingConfig(const std::string& path)
{
    const nlohmann::json json = readJsonFile(path);
    if (!json.is_object())
        throw Error(path + " must hold a JSON object with a pooling_mode_* key set to true.");
    static const std::vector<std::pair<const char*, PoolingMode>> modes{
        {"pooling_mode_cls_token", PoolingMode::FirstToken},
        {"pooling_mode_mean_tokens", PoolingMode::Mean},
        {"pooling_mode_max_tokens", PoolingMode::Max},
        {"pooling_mode_mean_sqrt_len_tokens", PoolingMode::MeanSqrtLen}};
    std::vector<std::string> set;
    PoolingMode mode = PoolingMode::FirstToken;
    for (const auto& [key, value] : modes)
        if (const auto it = json.find(key); it != json.end() && it->is_boolean() && it->get<bool>()) {
            set.push_back(key);
            mode = value;
        }
    for (const char* unsupported : {"pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken"})
        if (const auto it = json.find(unsupported); it != json.end() && it->is_boolean() && it->get<bool>())
            throw Error(path + " sets " + unsupported + ", which ScaleScope does not run; it pools by cls, mean, max "
                        "or mean_sqrt_len tokens.");
    if (set.empty())
        throw Error(path + " sets no pooling mode; one of pooling_mode_cls_token, pooling_mode_mean_tokens, "
                    "pooling_mode_max_tokens or pooling_mode_mean_sqrt_len_tokens must be true.");
    if (set.size() > 1)
        throw Error(path + " sets " + joinedWords(set) + "; ScaleScope pools one way, so exactly one must be true.");
    return mode;
}

// One module of modules.json: what it adds to the embedding. Folders must exist where a module
// reads files (Pooling); Normalize has none.
void readModule(const std::string& dir, const std::string& modulesPath, const nlohmann::json& module,
                SentenceEmbeddingConfig& embedding)
{
    const std::string type = module.value("type", std::string());
    const std::string path = module.value("path", std::string());
    if (type == kTransformerType) {
        if (!path.empty())
            throw Error(modulesPath + " places the Transformer module in \"" + abbreviatedText(path, 80) +
                        "\"; ScaleScope reads it from the folder root, where config.json and the weights are.");
    } else if (type == kPoolingType) {
        const std::string folder = joinPath(dir, path);
        const std::string config = joinPath(folder, "config.json");
        if (path.empty() || !directoryExists(folder) || !fileExists(config))
            throw Error(modulesPath + " names the Pooling module \"" + abbreviatedText(path, 80) + "\", but " + config +
                        " is missing.");
        embedding.pooling = readPoolingConfig(config);
    } else if (type == kNormalizeType) {
        embedding.normalize = true;
    } else {
        throw Error(modulesPath + " lists a module of type \"" + abbreviatedText(type, 80) +
                    "\", which ScaleScope does not run; it runs Transformer, Pooling and Normalize.");
    }
}

void readMaxSeqLength(const std::string& dir, SentenceEmbeddingConfig& embedding)
{
    const std::string path = joinPath(dir, "sentence_bert_config.json");
    if (!fileExists(path))
        return;
    const nlohmann::json json = readJsonFile(path);
    if (const auto it = json.find("max_seq_length"); json.is_object() && it != json.end() && !it->is_null())
        embedding.maxSeqLength = checkedJsonInteger(*it, path + ": \"max_seq_length\"", 1, 1'000'000);
}

void readPrompts(const std::string& dir, SentenceEmbeddingConfig& embedding)
{
    const std::string path = joinPath(dir, "config_sentence_transformers.json");
    if (!fileExists(path))
        return;
    const nlohmann::json json = readJsonFile(path);
    if (!json.is_object())
        throw Error(path + " must hold a JSON object.");
    if (const auto prompts = json.find("prompts"); prompts != json.end() && !prompts->is_null()) {
        if (!prompts->is_object())
            throw Error(path + ": \"prompts\" must map prompt names to texts.");
        for (const auto& [name, text] : prompts->items()) {
            if (!text.is_string())
                throw Error(path + ": the prompt \"" + abbreviatedText(name, 40) + "\" must be a text.");
            embedding.prompts.emplace_back(name, text.get<std::string>());
        }
    }
    if (const auto name = json.find("default_prompt_name"); name != json.end() && name->is_string())
        embedding.defaultPromptName = name->get<std::string>();
}

} // namespace

SentenceEmbeddingConfig readSentenceEmbedding(const std::string& dir)
{
    SentenceEmbeddingConfig embedding;
    const std::string modulesPath = joinPath(dir, "modules.json");
    if (!fileExists(modulesPath))
        return embedding;
    readingUserFile(modulesPath, [&] {
        const nlohmann::json modules = readJsonFile(modulesPath);
        if (!modules.is_array() || modules.empty())
            throw Error(modulesPath + " must hold a list of modules.");
        bool pooled = false;
        for (const nlohmann::json& module : modules) {
            if (!module.is_object() || !module.contains("type") || !module["type"].is_string() ||
                (module.contains("path") && !module["path"].is_string()))
                throw Error(modulesPath + " must list objects with a \"type\" and a \"path\".");
            readModule(dir, modulesPath, module, embedding);
            pooled = pooled || module["type"] == kPoolingType;
        }
        if (!pooled)
            throw Error(modulesPath + " lists no Pooling module; a sentence embedder pools its tokens into one vector.");
    });
    readMaxSeqLength(dir, embedding);
    readPrompts(dir, embedding);
    embedding.fromModules = true;
    return embedding;
}

std::vector<std::string> sentenceTransformersFiles(const std::string& dir)
{
    std::vector<std::string> files;
    const std::string modulesPath = joinPath(dir, "modules.json");
    if (!fileExists(modulesPath))
        return files;
    for (const char* name : {"modules.json", "sentence_bert_config.json", "config_sentence_transformers.json"})
        if (fileExists(joinPath(dir, name)))
            files.push_back(name);
    const nlohmann::json modules = readJsonFile(modulesPath);
    for (const nlohmann::json& module : modules.is_array() ? modules : nlohmann::json::array()) {
        const std::string path = module.is_object() ? module.value("path", std::string()) : std::string();
        // A module folder is one plain name beside config.json (sentence-transformers writes
        // "1_Pooling"); anything else is not copied anywhere.
        if (path.empty() || path.find('/') != std::string::npos || path == "." || path == ".." ||
            !directoryExists(joinPath(dir, path)))
            continue;
        std::vector<std::string> inside;
        for (const std::filesystem::directory_entry& entry : std::filesystem::directory_iterator(joinPath(dir, path)))
            if (entry.is_regular_file())
                inside.push_back(path + "/" + entry.path().filename().string());
        std::sort(inside.begin(), inside.end());
        if (inside.empty())
            files.push_back(path + "/");
        files.insert(files.end(), inside.begin(), inside.end());
    }
    return files;
}

void copySentenceTransformersFiles(const std::string& fromDir, const std::string& toDir)
{
    namespace fs = std::filesystem;
    for (const std::string& file : sentenceTransformersFiles(fromDir)) {
        const fs::path to = fs::path(toDir) / file;
        fs::create_directories(file.back() == '/' ? to : to.parent_path());
        if (file.back() != '/')
            fs::copy_file(fs::path(fromDir) / file, to, fs::copy_options::overwrite_existing);
    }
}

PoolingMode poolingModeFromName(const std::string& word)
{
    for (PoolingMode mode : {PoolingMode::FirstToken, PoolingMode::Mean, PoolingMode::Max, PoolingMode::MeanSqrtLen})
        if (word == poolingModeName(mode))
            return mode;
    throw Error("Unknown pooling \"" + abbreviatedText(word, 40) + "\"; expected cls, mean, max or mean_sqrt_len.");
}

} // namespace scalescope
