#include "text/sentencepiece_model.h"

#include <cstring>
#include <functional>

#include "common/error.h"
#include "text/utf8.h"

namespace scalescope {

namespace {

// A protobuf message being read; every read checks the bounds and throws `fail` past them.
class WireReader {
public:
    WireReader(const std::string& bytes, std::size_t begin, std::size_t end, const std::function<Error(std::string)>& fail)
        : bytes_(bytes), pos_(begin), end_(end), fail_(fail) {}

    bool atEnd() const { return pos_ >= end_; }

    std::uint64_t varint()
    {
        std::uint64_t value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (pos_ >= end_)
                throw fail_("a number runs past the end of its message");
            const auto byte = static_cast<unsigned char>(bytes_[pos_++]);
            value |= static_cast<std::uint64_t>(byte & 0x7F) << shift;
            if (byte < 0x80)
                return value;
        }
        throw fail_("a number is longer than 10 bytes");
    }

    // The [begin, end) of a length-delimited field's contents.
    std::pair<std::size_t, std::size_t> bytesField()
    {
        const std::uint64_t length = varint();
        if (length > end_ - pos_)
            throw fail_("a field of " + std::to_string(length) + " bytes runs past the end of its message");
        const std::size_t begin = pos_;
        pos_ += static_cast<std::size_t>(length);
        return {begin, pos_};
    }

    float fixed32Float()
    {
        if (end_ - pos_ < 4)
            throw fail_("a 4-byte field runs past the end of its message");
        std::uint32_t bits = 0;
        for (int i = 3; i >= 0; --i)
            bits = (bits << 8) | static_cast<unsigned char>(bytes_[pos_ + static_cast<std::size_t>(i)]);
        pos_ += 4;
        float value = 0.0f;
        std::memcpy(&value, &bits, sizeof value);
        return value;
    }

    void skip(int wireType)
    {
        if (wireType == 0) {
            varint();
        } else if (wireType == 2) {
            bytesField();
        } else if (wireType == 1 || wireType == 5) {
            const std::size_t size = wireType == 1 ? 8 : 4;
            if (end_ - pos_ < size)
                throw fail_("a fixed-size field runs past the end of its message");
            pos_ += size;
        } else {
            throw fail_("it holds protobuf wire type " + std::to_string(wireType) + ", which a ModelProto never uses");
        }
    }

private:
    const std::string& bytes_;
    std::size_t pos_;
    std::size_t end_;
    const std::function<Error(std::string)>& fail_;
};

// Calls onField(number, wireType, reader) for each field of bytes[begin, end); onField reads the
// value or returns false to have it skipped.
void forEachField(const std::string& bytes, std::size_t begin, std::size_t end, const std::function<Error(std::string)>& fail,
                  const std::function<bool(std::uint64_t, int, WireReader&)>& onField)
{
    WireReader reader(bytes, begin, end, fail);
    while (!reader.atEnd()) {
        const std::uint64_t key = reader.varint();
        const std::uint64_t number = key >> 3;
        const int wireType = static_cast<int>(key & 7);
        if (number == 0)
            throw fail("it holds a field numbered 0");
        if (!onField(number, wireType, reader))
            reader.skip(wireType);
    }
}

SentencePieceModel::Piece readPiece(const std::string& bytes, std::pair<std::size_t, std::size_t> range,
                                    const std::function<Error(std::string)>& fail)
{
    SentencePieceModel::Piece piece;
    bool hasText = false;
    forEachField(bytes, range.first, range.second, fail, [&](std::uint64_t number, int wire, WireReader& reader) {
        if (number == 1 && wire == 2) {
            const auto text = reader.bytesField();
            piece.piece = bytes.substr(text.first, text.second - text.first);
            hasText = true;
        } else if (number == 2 && wire == 5) {
            piece.score = reader.fixed32Float();
        } else if (number == 3 && wire == 0) {
            piece.type = static_cast<int>(reader.varint());
        } else {
            return false;
        }
        return true;
    });
    if (!hasText || !isValidUtf8(piece.piece))
        throw fail("a piece has no text or text that is not UTF-8");
    return piece;
}

} // namespace

SentencePieceModel parseSentencePieceModel(const std::string& bytes, const std::string& path)
{
    const std::function<Error(std::string)> fail = [&](const std::string& problem) {
        return Error(path + " is not a SentencePiece model: " + problem + ".");
    };
    SentencePieceModel model;
    const auto varintField = [](WireReader& reader) { return reader.varint(); };
    forEachField(bytes, 0, bytes.size(), fail, [&](std::uint64_t number, int wire, WireReader& reader) {
        if (wire != 2 || number < 1 || number > 3)
            return false;
        const auto range = reader.bytesField();
        if (number == 1) {
            model.pieces.push_back(readPiece(bytes, range, fail));
        } else if (number == 2) { // TrainerSpec: model_type 3, byte_fallback 35, unk_id 40
            forEachField(bytes, range.first, range.second, fail, [&](std::uint64_t field, int fieldWire, WireReader& inner) {
                if (fieldWire != 0 || (field != 3 && field != 35 && field != 40))
                    return false;
                const std::uint64_t value = varintField(inner);
                if (field == 3)
                    model.modelType = static_cast<int>(value);
                else if (field == 35)
                    model.byteFallback = value != 0;
                else
                    model.unkId = static_cast<int64_t>(static_cast<std::int32_t>(value));
                return true;
            });
        } else { // NormalizerSpec: precompiled_charsmap 2, add_dummy_prefix 3, remove_extra_whitespaces 4
            forEachField(bytes, range.first, range.second, fail, [&](std::uint64_t field, int fieldWire, WireReader& inner) {
                if (field == 2 && fieldWire == 2) {
                    const auto blob = inner.bytesField();
                    model.precompiledCharsmap = bytes.substr(blob.first, blob.second - blob.first);
                } else if ((field == 3 || field == 4) && fieldWire == 0) {
                    (field == 3 ? model.addDummyPrefix : model.removeExtraWhitespaces) = inner.varint() != 0;
                } else {
                    return false;
                }
                return true;
            });
        }
        return true;
    });
    if (model.pieces.empty())
        throw fail("it holds no pieces");
    return model;
}

} // namespace scalescope
