#include "model/forward_inputs.h"

#include <algorithm>

#include "common/error.h"

namespace scalescope {

void validateForwardInputs(const EncoderInputs& inputs, const ModelConfig& config, const EncoderLayout& layout)
{
    if (inputs.inputIds.empty())
        throw Error("The forward pass got no input sequence.");
    std::size_t seq = 0;
    for (const auto& row : inputs.inputIds)
        seq = std::max(seq, row.size());
    if (seq == 0)
        throw Error("The forward pass got an empty input sequence.");
    const int64_t maxTokens = layout.maxSequenceLength();
    if (static_cast<int64_t>(seq) > maxTokens)
        throw Error("The input has " + std::to_string(seq) + " tokens; this model takes at most " +
                    std::to_string(maxTokens) + ".");
    if (!inputs.attentionMask.empty() && inputs.attentionMask.size() != inputs.inputIds.size())
        throw Error("The attention mask has " + std::to_string(inputs.attentionMask.size()) +
                    " rows but there are " + std::to_string(inputs.inputIds.size()) + " input sequences.");
    if (!inputs.tokenTypeIds.empty() && inputs.tokenTypeIds.size() != inputs.inputIds.size())
        throw Error("The token type ids have " + std::to_string(inputs.tokenTypeIds.size()) +
                    " rows but there are " + std::to_string(inputs.inputIds.size()) + " input sequences.");
    for (std::size_t b = 0; b < inputs.inputIds.size(); ++b) {
        const auto& row = inputs.inputIds[b];
        if (!inputs.attentionMask.empty() && inputs.attentionMask[b].size() != row.size())
            throw Error("Attention mask row " + std::to_string(b) + " has " +
                        std::to_string(inputs.attentionMask[b].size()) + " entries but its input has " +
                        std::to_string(row.size()) + " ids.");
        for (int64_t id : row)
            if (id < 0 || id >= config.vocabSize)
                throw Error("Token id " + std::to_string(id) + " is outside the vocabulary (size " +
                            std::to_string(config.vocabSize) + ").");
        if (!inputs.tokenTypeIds.empty()) {
            const auto& types = inputs.tokenTypeIds[b];
            if (types.size() != row.size())
                throw Error("Token type row " + std::to_string(b) + " has " + std::to_string(types.size()) +
                            " entries but its input has " + std::to_string(row.size()) + " ids.");
            for (int64_t type : types)
                if (type < 0 || type >= config.typeVocabSize)
                    throw Error("Token type id " + std::to_string(type) + " is outside type_vocab_size " +
                                std::to_string(config.typeVocabSize) + ".");
        }
    }
    if (layout.headGathersPositions())
        for (const auto& [row, position] : inputs.logitPositions)
            if (row < 0 || static_cast<std::size_t>(row) >= inputs.inputIds.size() || position < 0 ||
                static_cast<std::size_t>(position) >= seq)
                throw Error("Logit position (" + std::to_string(row) + ", " + std::to_string(position) +
                            ") is outside the input.");
}

PaddedBatch padForwardInputs(const EncoderInputs& inputs, int64_t padTokenId)
{
    PaddedBatch padded;
    padded.batch = static_cast<int64_t>(inputs.inputIds.size());
    for (const auto& row : inputs.inputIds)
        padded.seq = std::max<int64_t>(padded.seq, static_cast<int64_t>(row.size()));
    const auto cells = static_cast<std::size_t>(padded.batch * padded.seq);
    padded.ids.assign(cells, padTokenId);
    padded.mask.assign(cells, 0.0f);
    padded.typeIds.assign(cells, 0);
    padded.realRows.assign(cells, 0);
    for (std::size_t b = 0; b < inputs.inputIds.size(); ++b) {
        const auto& row = inputs.inputIds[b];
        for (std::size_t t = 0; t < row.size(); ++t) {
            const std::size_t cell = b * static_cast<std::size_t>(padded.seq) + t;
            const bool real = inputs.attentionMask.empty() || inputs.attentionMask[b][t] != 0;
            padded.ids[cell] = row[t];
            padded.mask[cell] = real ? 1.0f : 0.0f;
            padded.realRows[cell] = real;
            if (!inputs.tokenTypeIds.empty())
                padded.typeIds[cell] = inputs.tokenTypeIds[b][t];
        }
    }
    return padded;
}

bool captureSelects(const CaptureRequest& request, const std::string& point, const std::string& module)
{
    if (request.all)
        return true;
    return std::find(request.names.begin(), request.names.end(), point) != request.names.end() ||
           std::find(request.names.begin(), request.names.end(), module) != request.names.end();
}

std::vector<std::string> selectCapturePoints(const std::vector<std::string>& points, const CaptureRequest& request)
{
    std::vector<std::string> selected;
    for (const std::string& point : points)
        if (captureSelects(request, point, point.substr(0, point.rfind('.'))))
            selected.push_back(point);
    return selected;
}

} // namespace scalescope
