#include "device/checkpoint_manifest.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "common/error.h"
#include "common/text_files.h"
#include "io/checkpoint_destination.h"
#include "io/sha256.h"

namespace scalescope {
namespace {

// What a runner reads: the config, the weights (one file or an index with its shards) and the
// tokenizer files (a runner may tokenize, and they are small).
std::vector<std::string> checkpointFiles()
{
    std::vector<std::string> names = {"config.json", "model.safetensors", "model.safetensors.index.json"};
    const std::vector<std::string>& tokenizerFiles = tokenizerFileNames();
    names.insert(names.end(), tokenizerFiles.begin(), tokenizerFiles.end());
    return names;
}

std::set<std::string> shardsOf(const std::string& indexPath)
{
    std::set<std::string> shards;
    const nlohmann::json index = readJsonFile(indexPath);
    const auto map = index.find("weight_map");
    if (map == index.end() || !map->is_object())
        return shards;
    for (const auto& [tensor, file] : map->items())
        if (file.is_string())
            shards.insert(file.get<std::string>());
    return shards;
}

} // namespace

bool isSafeManifestName(const std::string& name)
{
    if (name.empty() || name.size() > 255 || name[0] == '.')
        return false;
    for (char c : name)
        if (c == '/' || c == '\\' || c == ' ' || static_cast<unsigned char>(c) < 0x20 || c == 0x7F)
            return false;
    return true;
}

std::string manifestHash(std::vector<ManifestFile> files)
{
    std::sort(files.begin(), files.end(), [](const ManifestFile& a, const ManifestFile& b) { return a.name < b.name; });
    std::string text;
    for (const ManifestFile& file : files)
        text += file.name + " " + std::to_string(file.size) + " " + file.sha256 + "\n";
    return sha256Hex(text);
}

CheckpointManifest CheckpointManifest::of(const std::string& dir)
{
    std::set<std::string> names;
    for (const std::string& name : checkpointFiles())
        if (fileExists(joinPath(dir, name)))
            names.insert(name);
    if (names.count("model.safetensors.index.json"))
        for (const std::string& shard : shardsOf(joinPath(dir, "model.safetensors.index.json")))
            names.insert(shard);
    if (!names.count("config.json"))
        throw Error("No config.json in " + dir + ".");
    CheckpointManifest manifest;
    for (const std::string& name : names) {
        if (!isSafeManifestName(name))
            throw Error("The checkpoint in " + dir + " names the file \"" + name +
                        "\", which cannot be sent to a runner (it is not a plain file name).");
        ManifestFile file;
        file.name = name;
        file.path = joinPath(dir, name);
        std::error_code error;
        file.size = std::filesystem::file_size(file.path, error);
        if (error)
            throw Error("Cannot read " + file.path + ": " + error.message() + ".");
        file.sha256 = sha256OfFile(file.path);
        manifest.files.push_back(std::move(file));
    }
    manifest.hash = manifestHash(manifest.files);
    return manifest;
}

nlohmann::json CheckpointManifest::filesJson() const
{
    nlohmann::json out = nlohmann::json::array();
    for (const ManifestFile& file : files)
        out.push_back({{"name", file.name}, {"size", file.size}, {"sha256", file.sha256}});
    return out;
}

} // namespace scalescope
