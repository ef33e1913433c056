#pragma once
// The Unigram model of a SentencePiece vocabulary as Hugging Face's tokenizers runs it
// (tokenizers/src/models/unigram/model.rs, encode_optimized): Viterbi over the pieces' scores,
// every piece that starts at a character a candidate; a character that no one-character piece
// covers gets an unknown node scored min(score) - 10; consecutive unknown nodes are fused into one
// token, which takes the id of its text when the vocabulary has it, else unk_id. On equal path
// scores the candidate found first (earlier start, then shorter piece) stays.
// Threading: const after construction.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace scalescope {

class UnigramModel {
public:
    struct Token {
        int64_t id;
        std::size_t begin; // bytes of the piece
        std::size_t end;
    };

    // vocab[i] is the piece and score of id i; a piece listed twice is looked up as its later id.
    UnigramModel(std::vector<std::pair<std::string, double>> vocab, int64_t unkId);

    std::vector<Token> tokenize(const std::string& piece) const;
    int64_t size() const { return static_cast<int64_t>(vocab_.size()); }
    const std::string& piece(int64_t id) const { return vocab_[static_cast<std::size_t>(id)].first; }
    const std::pair<std::string, double>* find(const std::string& piece, int64_t* id) const;

private:
    struct Node {
        int32_t firstEdge = 0;
        int32_t edgeCount = 0;
        int32_t id = -1; // the piece ending here
    };
    void buildTrie();
    int32_t child(int32_t node, unsigned char label) const;

    std::vector<std::pair<std::string, double>> vocab_;
    std::unordered_map<std::string, int64_t> ids_;
    int64_t unkId_;
    double unkScore_;
    std::vector<Node> nodes_;
    std::vector<unsigned char> edgeLabels_;
    std::vector<int32_t> edgeTargets_;
};

} // namespace scalescope
