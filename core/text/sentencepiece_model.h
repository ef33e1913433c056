#pragma once
// The parts of a SentencePiece ModelProto (sentencepiece_model.proto) that a Unigram tokenizer
// needs, read by hand from the protobuf wire format: the pieces, TrainerSpec's model type and
// unk_id, NormalizerSpec's precompiled_charsmap and whitespace options. Unknown fields are skipped,
// as protobuf readers do.
#include <cstdint>
#include <string>
#include <vector>

namespace scalescope {

struct SentencePieceModel {
    enum PieceType { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };
    struct Piece {
        std::string piece;
        float score = 0.0f;
        int type = Normal;
    };
    std::vector<Piece> pieces;
    int modelType = 1; // 1 Unigram, 2 BPE, 3 word, 4 char
    int64_t unkId = 0;
    bool byteFallback = false;
    std::string precompiledCharsmap;
    bool addDummyPrefix = true;
    bool removeExtraWhitespaces = true;
};

// Throws scalescope::Error "<path> is not a SentencePiece model: ..." when `bytes` is no ModelProto
// (a field that runs past the end, an unknown wire type, no pieces, a piece without text).
SentencePieceModel parseSentencePieceModel(const std::string& bytes, const std::string& path);

} // namespace scalescope
