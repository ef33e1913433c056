#include "text/unigram_model.h"

#include <algorithm>
#include <limits>

#include "text/normalized_text.h"

namespace scalescope {

namespace {

// Hugging Face's K_UNK_PENALTY.
constexpr double kUnknownPenalty = 10.0;

} // namespace

UnigramModel::UnigramModel(std::vector<std::pair<std::string, double>> vocab, int64_t unkId)
    : vocab_(std::move(vocab)), unkId_(unkId)
{
    double minScore = std::numeric_limits<double>::infinity();
    ids_.reserve(vocab_.size());
    for (std::size_t i = 0; i < vocab_.size(); ++i) {
        ids_[vocab_[i].first] = static_cast<int64_t>(i);
        minScore = std::min(minScore, vocab_[i].second);
    }
    unkScore_ = minScore - kUnknownPenalty;
    buildTrie();
}

const std::pair<std::string, double>* UnigramModel::find(const std::string& piece, int64_t* id) const
{
    const auto it = ids_.find(piece);
    if (it == ids_.end())
        return nullptr;
    *id = it->second;
    return &vocab_[static_cast<std::size_t>(it->second)];
}

// A trie over the pieces' bytes, laid out flat from the sorted pieces: each node's children are
// contiguous edges sorted by label, so a lookup is a binary search per byte.
void UnigramModel::buildTrie()
{
    std::vector<const std::string*> keys;
    keys.reserve(ids_.size());
    for (const auto& entry : ids_)
        if (!entry.first.empty())
            keys.push_back(&entry.first);
    std::sort(keys.begin(), keys.end(), [](const std::string* a, const std::string* b) { return *a < *b; });
    struct Pending {
        int32_t node;
        std::size_t begin;
        std::size_t end;
        std::size_t depth;
    };
    nodes_.assign(1, Node{});
    std::vector<Pending> pending{{0, 0, keys.size(), 0}};
    while (!pending.empty()) {
        Pending at = pending.back();
        pending.pop_back();
        if (at.begin < at.end && keys[at.begin]->size() == at.depth) // sorts first among its prefix
            nodes_[static_cast<std::size_t>(at.node)].id = static_cast<int32_t>(ids_.at(*keys[at.begin++]));
        nodes_[static_cast<std::size_t>(at.node)].firstEdge = static_cast<int32_t>(edgeLabels_.size());
        std::size_t i = at.begin;
        while (i < at.end) {
            const auto label = static_cast<unsigned char>((*keys[i])[at.depth]);
            std::size_t j = i + 1;
            while (j < at.end && static_cast<unsigned char>((*keys[j])[at.depth]) == label)
                ++j;
            const auto childNode = static_cast<int32_t>(nodes_.size());
            nodes_.push_back(Node{});
            edgeLabels_.push_back(label);
            edgeTargets_.push_back(childNode);
            pending.push_back({childNode, i, j, at.depth + 1});
            i = j;
        }
        nodes_[static_cast<std::size_t>(at.node)].edgeCount
            = static_cast<int32_t>(edgeLabels_.size()) - nodes_[static_cast<std::size_t>(at.node)].firstEdge;
    }
}

int32_t UnigramModel::child(int32_t node, unsigned char label) const
{
    const Node& n = nodes_[static_cast<std::size_t>(node)];
    const auto begin = edgeLabels_.begin() + n.firstEdge;
    const auto end = begin + n.edgeCount;
    const auto it = std::lower_bound(begin, end, label);
    if (it == end || *it != label)
        return -1;
    return edgeTargets_[static_cast<std::size_t>(it - edgeLabels_.begin())];
}

std::vector<UnigramModel::Token> UnigramModel::tokenize(const std::string& piece) const
{
    struct Best {
        double score = 0.0;
        int64_t start = -1; // -1: no path ends here yet
        int64_t id = -1;
    };
    const std::size_t size = piece.size();
    std::vector<Best> best(size + 1);
    const auto offer = [&](std::size_t from, std::size_t to, int64_t id, double score) {
        const double candidate = score + best[from].score;
        if (best[to].start < 0 || candidate > best[to].score)
            best[to] = {candidate, static_cast<int64_t>(from), id};
    };
    for (std::size_t from = 0; from < size;) {
        char32_t cp = 0;
        const std::size_t charLength = decodeUtf8At(piece, from, &cp);
        bool singleCharacterPiece = false;
        int32_t node = 0;
        for (std::size_t to = from; to < size && node >= 0;) {
            node = child(node, static_cast<unsigned char>(piece[to++]));
            if (node < 0)
                break;
            const int32_t id = nodes_[static_cast<std::size_t>(node)].id;
            if (id < 0)
                continue;
            offer(from, to, id, vocab_[static_cast<std::size_t>(id)].second);
            singleCharacterPiece = singleCharacterPiece || to - from == charLength;
        }
        if (!singleCharacterPiece)
            offer(from, from + charLength, unkId_, unkScore_);
        from += charLength;
    }

    // Back from the end; unknown nodes in a row become one token.
    std::vector<Token> reversed;
    std::size_t unknownEnd = 0; // end of the run of unknown nodes being fused, 0 when none
    for (std::size_t end = size; end > 0;) {
        const Best& node = best[end];
        const auto start = static_cast<std::size_t>(node.start);
        if (node.id == unkId_) {
            if (unknownEnd == 0)
                unknownEnd = end;
        } else {
            if (unknownEnd != 0)
                reversed.push_back({unkId_, end, unknownEnd});
            unknownEnd = 0;
            reversed.push_back({node.id, start, end});
        }
        end = start;
    }
    if (unknownEnd != 0)
        reversed.push_back({unkId_, 0, unknownEnd});

    std::vector<Token> tokens(reversed.rbegin(), reversed.rend());
    for (Token& token : tokens) {
        if (token.id != unkId_)
            continue;
        // A fused run is looked up as text, as Hugging Face does.
        const auto it = ids_.find(piece.substr(token.begin, token.end - token.begin));
        token.id = it == ids_.end() ? unkId_ : it->second;
    }
    return tokens;
}

} // namespace scalescope
