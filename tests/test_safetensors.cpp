// The safetensors reader and writer, TensorStore's folder handling, and atomic file writes.
// Expected bytes and values are written out by hand (little-endian encodings of known numbers);
// malformed files are built byte by byte here rather than by the writer under test.
#include <QtTest>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "io/atomic_write.h"
#include "io/safetensors.h"

using namespace scalescope;

namespace {

std::string join(const QString& dir, const QString& name)
{
    return (dir + "/" + name).toStdString();
}

QByteArray readAll(const std::string& path)
{
    QFile file(QString::fromStdString(path));
    if (!file.open(QIODevice::ReadOnly))
        return {};
    return file.readAll();
}

bool writeRaw(const std::string& path, const QByteArray& bytes)
{
    QFile file(QString::fromStdString(path));
    return file.open(QIODevice::WriteOnly | QIODevice::Truncate) && file.write(bytes) == bytes.size();
}

QByteArray littleEndian64(quint64 value)
{
    QByteArray bytes(8, '\0');
    for (int i = 0; i < 8; ++i)
        bytes[i] = static_cast<char>((value >> (8 * i)) & 0xFF);
    return bytes;
}

// A safetensors file assembled by hand: length prefix (the header's own length unless overridden),
// the header text, then dataSize bytes of a recognisable pattern.
QByteArray rawSafetensors(const QByteArray& header, int dataSize, qint64 lengthOverride = -1)
{
    QByteArray bytes = littleEndian64(lengthOverride >= 0 ? quint64(lengthOverride) : quint64(header.size()));
    bytes += header;
    for (int i = 0; i < dataSize; ++i)
        bytes += static_cast<char>(i * 7 + 1);
    return bytes;
}

QStringList entriesOf(const QString& dir)
{
    QStringList entries = QDir(dir).entryList(QDir::AllEntries | QDir::Hidden | QDir::System | QDir::NoDotAndDotDot);
    entries.sort();
    return entries;
}

TensorToWrite tensorFromBytes(const std::string& name, Dtype dtype, std::vector<int64_t> shape,
                              std::vector<uint8_t> bytes)
{
    TensorToWrite tensor;
    tensor.name = name;
    tensor.dtype = dtype;
    tensor.shape = std::move(shape);
    tensor.bytes = std::move(bytes);
    return tensor;
}

// Runs body, which must throw scalescope::Error; returns its message (empty when nothing was thrown).
QString errorFrom(const std::function<void()>& body, bool* threw)
{
    *threw = false;
    try {
        body();
    } catch (const Error& error) {
        *threw = true;
        return QString::fromStdString(error.what());
    }
    return {};
}

#define EXPECT_ERROR_MENTIONING(body, mentions)                                                             \
    do {                                                                                                    \
        bool threw_ = false;                                                                                \
        const QString message_ = errorFrom([&] { body; }, &threw_);                                         \
        QVERIFY2(threw_, "expected a scalescope::Error");                                                   \
        for (const QString& mention_ : QStringList(mentions))                                               \
            QVERIFY2(message_.contains(mention_), qPrintable("'" + message_ + "' does not mention '" + mention_ + "'")); \
    } while (false)

} // namespace

class TestSafetensors : public QObject {
    Q_OBJECT

private slots:
    void dtypeNamesAndSizes();
    void roundTripEachDtype_data();
    void roundTripEachDtype();
    void writtenFileMatchesTheFormat();
    void headerOrderScalarsAndEmptyTensors();
    void metadataRoundTrip();
    void makeFloatTensorNarrows();
    void badFiles_data();
    void badFiles();
    void directoryWithSingleFile();
    void shardedDirectory();
    void badDirectories_data();
    void badDirectories();
    void requireNamesTensorAndLocation();
    void writerFailureLeavesNoFile();
    void writerRejectsInconsistentTensors();
    void failedWriteRemovesTemporary();
    void overwriteFalseKeepsExistingFile();
    void overwriteReplacesFile();
    void rewritingKeepsOpenMappingsIntact();
};

void TestSafetensors::dtypeNamesAndSizes()
{
    const std::vector<std::pair<std::string, std::size_t>> expected = {
        {"BOOL", 1}, {"U8", 1},   {"I8", 1},  {"I16", 2}, {"I32", 4},     {"I64", 8},
        {"F16", 2},  {"BF16", 2}, {"F32", 4}, {"F64", 8}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
    for (const auto& [name, size] : expected) {
        Dtype dtype = Dtype::Bool;
        QVERIFY2(parseDtype(name, &dtype), name.c_str());
        QCOMPARE(std::string(dtypeName(dtype)), name);
        QCOMPARE(dtypeSize(dtype), size);
    }
    Dtype dtype;
    QVERIFY(!parseDtype("F4", &dtype));
    QVERIFY(!parseDtype("f32", &dtype));
    QVERIFY(!parseDtype("", &dtype));
    QVERIFY(!parseDtype("F8_E4M3FN", &dtype));
}

void TestSafetensors::roundTripEachDtype_data()
{
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<QList<qint64>>("shape");
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QList<float>>("values");

    const auto bytes = [](std::initializer_list<int> list) {
        QByteArray array;
        for (int b : list)
            array += static_cast<char>(b);
        return array;
    };
    QTest::newRow("BOOL") << "BOOL" << QList<qint64>{2, 2} << bytes({0, 1, 1, 0}) << QList<float>{0, 1, 1, 0};
    QTest::newRow("U8") << "U8" << QList<qint64>{3} << bytes({0, 7, 255}) << QList<float>{0, 7, 255};
    QTest::newRow("I8") << "I8" << QList<qint64>{3} << bytes({0x80, 0xFF, 0x05}) << QList<float>{-128, -1, 5};
    QTest::newRow("I16") << "I16" << QList<qint64>{3} << bytes({0x00, 0x80, 0xFF, 0xFF, 0x34, 0x12})
                         << QList<float>{-32768, -1, 4660};
    QTest::newRow("I32") << "I32" << QList<qint64>{2} << bytes({0xFE, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x01, 0x00})
                         << QList<float>{-2, 65536};
    QTest::newRow("I64") << "I64" << QList<qint64>{2}
                         << bytes({0xFB, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0, 1, 0, 0, 0})
                         << QList<float>{-5, 4294967296.0f};
    QTest::newRow("F16") << "F16" << QList<qint64>{1, 3} << bytes({0x00, 0x3C, 0x00, 0xC1, 0x01, 0x00})
                         << QList<float>{1.0f, -2.5f, 5.9604644775390625e-08f};
    QTest::newRow("BF16") << "BF16" << QList<qint64>{2, 1} << bytes({0x80, 0x3F, 0x20, 0xC0})
                          << QList<float>{1.0f, -2.5f};
    QTest::newRow("F32") << "F32" << QList<qint64>{2} << bytes({0, 0, 0xC0, 0x3F, 0, 0, 0x80, 0xBE})
                         << QList<float>{1.5f, -0.25f};
    QTest::newRow("F64") << "F64" << QList<qint64>{2}
                         << bytes({0, 0, 0, 0, 0, 0, 0xF0, 0x3F, 0, 0, 0, 0, 0, 0, 0x08, 0xC0})
                         << QList<float>{1.0f, -3.0f};
    QTest::newRow("F8_E4M3") << "F8_E4M3" << QList<qint64>{2, 2} << bytes({0x38, 0xB8, 0x7E, 0x01})
                             << QList<float>{1.0f, -1.0f, 448.0f, 0.001953125f};
    QTest::newRow("F8_E5M2") << "F8_E5M2" << QList<qint64>{3} << bytes({0x3C, 0x7B, 0x01})
                             << QList<float>{1.0f, 57344.0f, 1.52587890625e-05f};
}

void TestSafetensors::roundTripEachDtype()
{
    QFETCH(QString, dtype);
    QFETCH(QList<qint64>, shape);
    QFETCH(QByteArray, bytes);
    QFETCH(QList<float>, values);

    Dtype parsed;
    QVERIFY(parseDtype(dtype.toStdString(), &parsed));
    QTemporaryDir dir;
    const std::string path = join(dir.path(), dtype + ".safetensors");
    // A 3-byte tensor first puts the tensor under test at an odd offset, so reads must cope with
    // unaligned data.
    const std::vector<TensorToWrite> tensors = {
        tensorFromBytes("odd", Dtype::U8, {3}, {9, 8, 7}),
        tensorFromBytes("tested", parsed, std::vector<int64_t>(shape.begin(), shape.end()),
                        std::vector<uint8_t>(bytes.begin(), bytes.end())),
    };
    writeSafetensors(path, tensors);

    const auto file = SafetensorsFile::open(path);
    QCOMPARE(file->path(), path);
    QCOMPARE(file->tensors().size(), std::size_t(2));
    const TensorView* view = file->find("tested");
    QVERIFY(view);
    QCOMPARE(view->name, std::string("tested"));
    QCOMPARE(view->file, path);
    QCOMPARE(std::string(dtypeName(view->dtype)), dtype.toStdString());
    QCOMPARE(view->shape, std::vector<int64_t>(shape.begin(), shape.end()));
    QCOMPARE(view->numel(), qint64(values.size()));
    QCOMPARE(view->byteSize, std::size_t(bytes.size()));
    QCOMPARE(QByteArray(reinterpret_cast<const char*>(view->data), int(view->byteSize)), bytes);

    const FloatTensor asFloat = view->toFloat();
    QCOMPARE(asFloat.shape, view->shape);
    QCOMPARE(asFloat.values, std::vector<float>(values.begin(), values.end()));

    const TensorView* odd = file->find("odd");
    QVERIFY(odd);
    QCOMPARE(odd->toFloat().values, std::vector<float>({9, 8, 7}));
    QVERIFY(!file->find("absent"));
}

void TestSafetensors::writtenFileMatchesTheFormat()
{
    // Reads the writer's output with nothing but the format description: 8-byte little-endian
    // length, JSON header, data sections laid out back to back from offset 0.
    QTemporaryDir dir;
    const std::string path = join(dir.path(), "format.safetensors");
    writeSafetensors(path,
                     {tensorFromBytes("first", Dtype::BF16, {3}, {1, 2, 3, 4, 5, 6}),
                      tensorFromBytes("second", Dtype::F8_E4M3, {1, 5}, {10, 11, 12, 13, 14}),
                      tensorFromBytes("third", Dtype::I64, {1}, {1, 0, 0, 0, 0, 0, 0, 0})},
                     {{"format", "pt"}});
    const QByteArray raw = readAll(path);
    QVERIFY(raw.size() > 8);
    quint64 headerLength = 0;
    for (int i = 7; i >= 0; --i)
        headerLength = (headerLength << 8) | static_cast<unsigned char>(raw[i]);
    QCOMPARE(headerLength % 8, quint64(0)); // data starts 8-byte aligned
    QCOMPARE(quint64(raw.size()), 8 + headerLength + 6 + 5 + 8);

    const QByteArray headerText = raw.mid(8, int(headerLength));
    const nlohmann::json header = nlohmann::json::parse(headerText.toStdString());
    QCOMPARE(header["__metadata__"]["format"].get<std::string>(), std::string("pt"));
    QCOMPARE(header["first"]["dtype"].get<std::string>(), std::string("BF16"));
    QCOMPARE(header["first"]["shape"].get<std::vector<int64_t>>(), std::vector<int64_t>({3}));
    QCOMPARE(header["first"]["data_offsets"].get<std::vector<uint64_t>>(), std::vector<uint64_t>({0, 6}));
    QCOMPARE(header["second"]["dtype"].get<std::string>(), std::string("F8_E4M3"));
    QCOMPARE(header["second"]["shape"].get<std::vector<int64_t>>(), std::vector<int64_t>({1, 5}));
    QCOMPARE(header["second"]["data_offsets"].get<std::vector<uint64_t>>(), std::vector<uint64_t>({6, 11}));
    QCOMPARE(header["third"]["dtype"].get<std::string>(), std::string("I64"));
    QCOMPARE(header["third"]["data_offsets"].get<std::vector<uint64_t>>(), std::vector<uint64_t>({11, 19}));
    const QByteArray data = raw.mid(int(8 + headerLength));
    QCOMPARE(data, QByteArray("\x01\x02\x03\x04\x05\x06\x0A\x0B\x0C\x0D\x0E\x01\x00\x00\x00\x00\x00\x00\x00", 19));
}

void TestSafetensors::headerOrderScalarsAndEmptyTensors()
{
    QTemporaryDir dir;
    const std::string path = join(dir.path(), "shapes.safetensors");
    const float two = 2.0f;
    writeSafetensors(path, {makeFloatTensor("zeta", Dtype::F32, {}, &two),
                            makeFloatTensor("alpha", Dtype::F32, {0, 3}, nullptr),
                            makeFloatTensor("mid", Dtype::BF16, {1}, &two)});
    const auto file = SafetensorsFile::open(path);
    QCOMPARE(file->tensors().size(), std::size_t(3));
    QCOMPARE(file->tensors()[0].name, std::string("zeta")); // header order, not alphabetical
    QCOMPARE(file->tensors()[1].name, std::string("alpha"));
    QCOMPARE(file->tensors()[2].name, std::string("mid"));
    QCOMPARE(file->tensors()[0].numel(), qint64(1));
    QCOMPARE(file->tensors()[0].toFloat().values, std::vector<float>({2.0f}));
    QCOMPARE(file->tensors()[1].numel(), qint64(0));
    QCOMPARE(file->tensors()[1].byteSize, std::size_t(0));
    QVERIFY(file->tensors()[1].toFloat().values.empty());
    QCOMPARE(file->tensors()[1].toFloat().shape, std::vector<int64_t>({0, 3}));
    QCOMPARE(file->tensors()[2].toFloat().values, std::vector<float>({2.0f}));
    QVERIFY(file->metadata().empty());

    // A hand-written file with an empty header and a zero-size tensor sitting inside another one's
    // bytes: both legal.
    const std::string handPath = join(dir.path(), "hand.safetensors");
    QVERIFY(writeRaw(handPath, rawSafetensors("{}", 0)));
    QVERIFY(SafetensorsFile::open(handPath)->tensors().empty());
    QVERIFY(writeRaw(handPath, rawSafetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                              R"("e":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}})",
                                              8)));
    QCOMPARE(SafetensorsFile::open(handPath)->tensors().size(), std::size_t(2));
    // Header padded with trailing spaces, as other writers do.
    QVERIFY(writeRaw(handPath, rawSafetensors(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}     )", 2)));
    QCOMPARE(SafetensorsFile::open(handPath)->find("a")->toFloat().values, std::vector<float>({1, 8}));
}

void TestSafetensors::metadataRoundTrip()
{
    QTemporaryDir dir;
    const std::string path = join(dir.path(), "meta.safetensors");
    const std::map<std::string, std::string> metadata = {
        {"format", "pt"}, {"note", "caf\xC3\xA9 \"quoted\""}, {"empty", ""}};
    const float one = 1.0f;
    writeSafetensors(path, {makeFloatTensor("w", Dtype::F32, {1}, &one)}, metadata);
    const auto file = SafetensorsFile::open(path);
    QCOMPARE(file->metadata(), metadata);
    QCOMPARE(file->tensors().size(), std::size_t(1)); // __metadata__ is not a tensor
    QVERIFY(!file->find("__metadata__"));
}

void TestSafetensors::makeFloatTensorNarrows()
{
    const float values[3] = {1.0f, -2.5f, 65520.0f};
    const TensorToWrite f16 = makeFloatTensor("h", Dtype::F16, {3}, values);
    QCOMPARE(f16.name, std::string("h"));
    QCOMPARE(f16.shape, std::vector<int64_t>({3}));
    QCOMPARE(f16.bytes, std::vector<uint8_t>({0x00, 0x3C, 0x00, 0xC1, 0x00, 0x7C})); // 65520 -> Inf
    const TensorToWrite bf16 = makeFloatTensor("b", Dtype::BF16, {1, 2}, values);
    QCOMPARE(bf16.bytes, std::vector<uint8_t>({0x80, 0x3F, 0x20, 0xC0}));
    const TensorToWrite f32 = makeFloatTensor("f", Dtype::F32, {1}, values + 1);
    QCOMPARE(f32.bytes, std::vector<uint8_t>({0x00, 0x00, 0x20, 0xC0}));

    FloatTensor tensor;
    tensor.shape = {2};
    tensor.values = {1.5f, -0.25f};
    const TensorToWrite fromTensor = makeF32Tensor("t", tensor);
    QCOMPARE(fromTensor.dtype, Dtype::F32);
    QCOMPARE(fromTensor.bytes, std::vector<uint8_t>({0, 0, 0xC0, 0x3F, 0, 0, 0x80, 0xBE}));

    tensor.shape = {3};
    EXPECT_ERROR_MENTIONING(makeF32Tensor("mismatched", tensor), "mismatched");
    EXPECT_ERROR_MENTIONING(makeFloatTensor("codes", Dtype::F8_E4M3, {3}, values), "codes");
    EXPECT_ERROR_MENTIONING(makeFloatTensor("negative", Dtype::F32, {-1}, values), "negative");
}

void TestSafetensors::badFiles_data()
{
    QTest::addColumn<QByteArray>("content");
    QTest::addColumn<QStringList>("mentions");

    const QByteArray okTensor = R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
    QTest::newRow("empty file") << QByteArray() << QStringList{"0 bytes"};
    QTest::newRow("truncated length") << QByteArray("\x10\x00\x00\x00\x00", 5) << QStringList{};
    QTest::newRow("header length past end") << rawSafetensors("{" + okTensor + "}", 8, 1000) << QStringList{"1000"};
    QTest::newRow("absurd header length") << rawSafetensors("{}", 0, qint64(1) << 40) << QStringList{};
    QTest::newRow("invalid JSON") << rawSafetensors(R"({"w":{"dtype":)", 0) << QStringList{"JSON"};
    QTest::newRow("header not an object") << rawSafetensors("[1, 2]", 0) << QStringList{"object"};
    QTest::newRow("entry not an object") << rawSafetensors(R"({"w": 5})", 0) << QStringList{"'w'"};
    QTest::newRow("no dtype") << rawSafetensors(R"({"w":{"shape":[2],"data_offsets":[0,8]}})", 8)
                              << QStringList{"'w'", "dtype"};
    QTest::newRow("no shape") << rawSafetensors(R"({"w":{"dtype":"F32","data_offsets":[0,8]}})", 8)
                              << QStringList{"'w'", "shape"};
    QTest::newRow("no data_offsets") << rawSafetensors(R"({"w":{"dtype":"F32","shape":[2]}})", 8)
                                     << QStringList{"'w'", "data_offsets"};
    QTest::newRow("unknown dtype") << rawSafetensors(R"({"w":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}})", 8)
                                   << QStringList{"'w'", "F4"};
    QTest::newRow("dtype not a string") << rawSafetensors(R"({"w":{"dtype":4,"shape":[2],"data_offsets":[0,8]}})", 8)
                                        << QStringList{"'w'", "dtype"};
    QTest::newRow("negative dimension")
        << rawSafetensors(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8) << QStringList{"'w'", "-2"};
    QTest::newRow("fractional dimension")
        << rawSafetensors(R"({"w":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", 8) << QStringList{"'w'"};
    QTest::newRow("shape not a list")
        << rawSafetensors(R"({"w":{"dtype":"F32","shape":2,"data_offsets":[0,8]}})", 8) << QStringList{"'w'"};
    QTest::newRow("shape product overflows")
        << rawSafetensors(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,8]}})", 8)
        << QStringList{"'w'"};
    QTest::newRow("byte size overflows")
        << rawSafetensors(R"({"w":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,8]}})", 8)
        << QStringList{"'w'"};
    QTest::newRow("offsets reversed")
        << rawSafetensors(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", 8) << QStringList{"'w'"};
    QTest::newRow("offsets not a pair")
        << rawSafetensors(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", 8) << QStringList{"'w'"};
    QTest::newRow("negative offset")
        << rawSafetensors(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", 8) << QStringList{"'w'"};
    QTest::newRow("offsets past the data")
        << rawSafetensors("{" + okTensor + "}", 4) << QStringList{"'w'", "[0, 8]"};
    QTest::newRow("size does not match shape")
        << rawSafetensors(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8)
        << QStringList{"'w'", "[3]", "12"};
    QTest::newRow("overlapping tensors")
        << rawSafetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                          R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                          12)
        << QStringList{"'a'", "'b'", "overlap"};
    QTest::newRow("same range twice")
        << rawSafetensors(R"({"b":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                          R"("a":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}})",
                          4)
        << QStringList{"'a'", "'b'"};
    QTest::newRow("duplicate tensor name")
        << rawSafetensors("{" + okTensor + "," + okTensor + "}", 8) << QStringList{"'w'"};
    QTest::newRow("metadata not strings")
        << rawSafetensors(R"({"__metadata__":{"epoch":3},)" + okTensor + "}", 8) << QStringList{"__metadata__", "epoch"};
    QTest::newRow("metadata not an object")
        << rawSafetensors(R"({"__metadata__":"x",)" + okTensor + "}", 8) << QStringList{"__metadata__"};
}

void TestSafetensors::badFiles()
{
    QFETCH(QByteArray, content);
    QFETCH(QStringList, mentions);
    QTemporaryDir dir;
    const std::string path = join(dir.path(), "broken.safetensors");
    QVERIFY(writeRaw(path, content));
    mentions << QString::fromStdString(path);
    EXPECT_ERROR_MENTIONING(SafetensorsFile::open(path), mentions);
    EXPECT_ERROR_MENTIONING(TensorStore::openFile(path), mentions);
}

void TestSafetensors::directoryWithSingleFile()
{
    QTemporaryDir dir;
    const float values[2] = {0.5f, 4.0f};
    writeSafetensors(join(dir.path(), "model.safetensors"), {makeFloatTensor("b.weight", Dtype::F32, {2}, values),
                                                              makeFloatTensor("a.weight", Dtype::F16, {2}, values)});
    const auto store = TensorStore::openDirectory(dir.path().toStdString());
    QCOMPARE(store->location(), dir.path().toStdString());
    QCOMPARE(store->tensors().size(), std::size_t(2));
    QCOMPARE(store->tensors()[0]->name, std::string("a.weight")); // sorted by name
    QCOMPARE(store->tensors()[1]->name, std::string("b.weight"));
    QCOMPARE(store->require("a.weight").toFloat().values, std::vector<float>({0.5f, 4.0f}));
    QCOMPARE(store->require("a.weight").dtype, Dtype::F16);
    QCOMPARE(store->mappedBytes(), std::size_t(8 + 4));
    QVERIFY(!store->find("c.weight"));

    const auto single = TensorStore::openFile(join(dir.path(), "model.safetensors"));
    QCOMPARE(single->location(), join(dir.path(), "model.safetensors"));
    QCOMPARE(single->require("b.weight").toFloat().values, std::vector<float>({0.5f, 4.0f}));
}

void TestSafetensors::shardedDirectory()
{
    QTemporaryDir dir;
    const float values[3] = {1.0f, 2.0f, 3.0f};
    const std::string shard1 = join(dir.path(), "model-00001-of-00002.safetensors");
    const std::string shard2 = join(dir.path(), "model-00002-of-00002.safetensors");
    writeSafetensors(shard1, {makeFloatTensor("layer.0.weight", Dtype::F32, {3}, values),
                              makeFloatTensor("layer.0.bias", Dtype::F32, {1}, values + 2),
                              makeFloatTensor("unlisted", Dtype::F32, {1}, values)});
    writeSafetensors(shard2, {makeFloatTensor("layer.1.weight", Dtype::BF16, {1, 2}, values + 1)});
    // A model.safetensors next to the index must not be used: the index wins.
    writeSafetensors(join(dir.path(), "model.safetensors"), {makeFloatTensor("decoy", Dtype::F32, {1}, values)});
    const nlohmann::json index = {
        {"metadata", {{"total_size", 28}}},
        {"weight_map",
         {{"layer.0.weight", "model-00001-of-00002.safetensors"},
          {"layer.0.bias", "model-00001-of-00002.safetensors"},
          {"layer.1.weight", "model-00002-of-00002.safetensors"}}}};
    writeBytesAtomically(join(dir.path(), "model.safetensors.index.json"), index.dump());

    const auto store = TensorStore::openDirectory(dir.path().toStdString());
    QCOMPARE(store->tensors().size(), std::size_t(3));
    QCOMPARE(store->tensors()[0]->name, std::string("layer.0.bias"));
    QCOMPARE(store->tensors()[1]->name, std::string("layer.0.weight"));
    QCOMPARE(store->tensors()[2]->name, std::string("layer.1.weight"));
    QCOMPARE(store->require("layer.0.weight").file, shard1);
    QCOMPARE(store->require("layer.1.weight").file, shard2);
    QCOMPARE(store->require("layer.0.weight").toFloat().values, std::vector<float>({1, 2, 3}));
    QCOMPARE(store->require("layer.0.bias").toFloat().values, std::vector<float>({3}));
    QCOMPARE(store->require("layer.1.weight").toFloat().values, std::vector<float>({2, 3}));
    QCOMPARE(store->require("layer.1.weight").toFloat().shape, std::vector<int64_t>({1, 2}));
    QVERIFY(!store->find("decoy"));
    QVERIFY(store->mappedBytes() >= std::size_t(12 + 4 + 4));
}

void TestSafetensors::badDirectories_data()
{
    QTest::addColumn<QString>("index");
    QTest::addColumn<QStringList>("mentions");
    // Every case has shard-1.safetensors (tensors a and b) in the checkpoint folder and a copy in
    // its parent, so an index that escapes the folder would otherwise find a file.
    QTest::newRow("no checkpoint files") << QString() << QStringList{"No model.safetensors or model.safetensors.index.json in"};
    QTest::newRow("missing shard")
        << R"({"weight_map":{"a":"shard-1.safetensors","c":"shard-2.safetensors"}})"
        << QStringList{"model.safetensors.index.json", "shard-2.safetensors", "'c'"};
    QTest::newRow("tensor not in its shard")
        << R"({"weight_map":{"a":"shard-1.safetensors","zz":"shard-1.safetensors"}})"
        << QStringList{"'zz'", "shard-1.safetensors"};
    QTest::newRow("shard outside the folder")
        << R"({"weight_map":{"a":"../shard-1.safetensors"}})" << QStringList{"../shard-1.safetensors", "'a'"};
    QTest::newRow("shard in a subfolder")
        << R"({"weight_map":{"a":"sub/shard-1.safetensors"}})" << QStringList{"sub/shard-1.safetensors"};
    QTest::newRow("shard named ..") << R"({"weight_map":{"a":".."}})" << QStringList{"'a'"};
    QTest::newRow("invalid index JSON") << R"({"weight_map": {)" << QStringList{"model.safetensors.index.json"};
    QTest::newRow("no weight_map") << R"({"metadata": {}})" << QStringList{"model.safetensors.index.json", "weight_map"};
    QTest::newRow("weight_map not an object") << R"({"weight_map": []})" << QStringList{"weight_map"};
    QTest::newRow("empty weight_map") << R"({"weight_map": {}})" << QStringList{"model.safetensors.index.json"};
    QTest::newRow("shard name not a string") << R"({"weight_map":{"a":3}})" << QStringList{"'a'"};
}

void TestSafetensors::badDirectories()
{
    QFETCH(QString, index);
    QFETCH(QStringList, mentions);
    QTemporaryDir root;
    const QString checkpoint = root.path() + "/checkpoint";
    QVERIFY(QDir().mkpath(checkpoint + "/sub"));
    const float values[2] = {1.0f, 2.0f};
    const std::vector<TensorToWrite> tensors = {makeFloatTensor("a", Dtype::F32, {1}, values),
                                                makeFloatTensor("b", Dtype::F32, {1}, values + 1)};
    writeSafetensors(join(checkpoint, "shard-1.safetensors"), tensors);
    writeSafetensors(join(root.path(), "shard-1.safetensors"), tensors);
    writeSafetensors(join(checkpoint + "/sub", "shard-1.safetensors"), tensors);
    if (!index.isEmpty())
        QVERIFY(writeRaw(join(checkpoint, "model.safetensors.index.json"), index.toUtf8()));
    mentions << checkpoint;
    EXPECT_ERROR_MENTIONING(TensorStore::openDirectory(checkpoint.toStdString()), mentions);
}

void TestSafetensors::requireNamesTensorAndLocation()
{
    QTemporaryDir dir;
    const float one = 1.0f;
    writeSafetensors(join(dir.path(), "model.safetensors"), {makeFloatTensor("present", Dtype::F32, {1}, &one)});
    const auto store = TensorStore::openDirectory(dir.path().toStdString());
    bool threw = false;
    const QString message = errorFrom([&] { store->require("qa_outputs.weight"); }, &threw);
    QVERIFY(threw);
    QCOMPARE(message, "Tensor 'qa_outputs.weight' is missing from " + dir.path() + ".");

    EXPECT_ERROR_MENTIONING(TensorStore::openDirectory(join(dir.path(), "nowhere")), QString("nowhere"));
    // An empty model.safetensors is reported as a bad file, naming it.
    QTemporaryDir emptyDir;
    QVERIFY(writeRaw(join(emptyDir.path(), "model.safetensors"), QByteArray()));
    EXPECT_ERROR_MENTIONING(TensorStore::openDirectory(emptyDir.path().toStdString()),
                            QString::fromStdString(join(emptyDir.path(), "model.safetensors")));
}

void TestSafetensors::writerFailureLeavesNoFile()
{
    QTemporaryDir dir;
    const float one = 1.0f;
    const std::string target = join(dir.path() + "/missing-folder", "out.safetensors");
    EXPECT_ERROR_MENTIONING(writeSafetensors(target, {makeFloatTensor("w", Dtype::F32, {1}, &one)}),
                            QString::fromStdString(target));
    QVERIFY(entriesOf(dir.path()).isEmpty());
    QVERIFY(!QFileInfo::exists(QString::fromStdString(target)));
}

void TestSafetensors::writerRejectsInconsistentTensors()
{
    QTemporaryDir dir;
    const std::string target = join(dir.path(), "out.safetensors");
    QVERIFY(writeRaw(target, "previous content"));
    EXPECT_ERROR_MENTIONING(writeSafetensors(target, {tensorFromBytes("short", Dtype::F32, {2}, {1, 2, 3, 4})}),
                            (QStringList{"'short'", QString::fromStdString(target)}));
    EXPECT_ERROR_MENTIONING(writeSafetensors(target, {tensorFromBytes("twice", Dtype::U8, {1}, {1}),
                                                      tensorFromBytes("twice", Dtype::U8, {1}, {2})}),
                            QString("'twice'"));
    EXPECT_ERROR_MENTIONING(writeSafetensors(target, {tensorFromBytes("__metadata__", Dtype::U8, {1}, {1})}),
                            QString("__metadata__"));
    EXPECT_ERROR_MENTIONING(writeSafetensors(target, {tensorFromBytes("negative", Dtype::U8, {-1}, {})}),
                            QString("'negative'"));
    QCOMPARE(entriesOf(dir.path()), QStringList{"out.safetensors"});
    QCOMPARE(readAll(target), QByteArray("previous content"));
}

void TestSafetensors::failedWriteRemovesTemporary()
{
    QTemporaryDir dir;
    const std::string target = join(dir.path(), "result.bin");
    QVERIFY(writeRaw(join(dir.path(), "neighbour.txt"), "keep"));

    std::string seenTemporary;
    bool temporaryExistedDuringWrite = false;
    const auto failingWriter = [&](const std::string& temporaryPath) {
        seenTemporary = temporaryPath;
        QFile file(QString::fromStdString(temporaryPath));
        if (file.open(QIODevice::WriteOnly))
            file.write("half of the data");
        file.close();
        temporaryExistedDuringWrite = QFileInfo::exists(QString::fromStdString(temporaryPath));
        throw Error("Simulated failure while writing " + temporaryPath + ".");
    };
    EXPECT_ERROR_MENTIONING(writeFileAtomically(target, failingWriter), QString("Simulated failure"));
    QVERIFY(temporaryExistedDuringWrite);
    // The temporary lives next to the target (same file system for the rename) and is hidden.
    QCOMPARE(QFileInfo(QString::fromStdString(seenTemporary)).absolutePath(), QFileInfo(dir.path()).absoluteFilePath());
    QVERIFY(QFileInfo(QString::fromStdString(seenTemporary)).fileName().startsWith('.'));
    QCOMPARE(entriesOf(dir.path()), QStringList{"neighbour.txt"});

    // Same with an existing target: it keeps its content.
    QVERIFY(writeRaw(target, "original"));
    EXPECT_ERROR_MENTIONING(writeFileAtomically(target, failingWriter), QString("Simulated failure"));
    QCOMPARE(readAll(target), QByteArray("original"));
    QCOMPARE(entriesOf(dir.path()), (QStringList{"neighbour.txt", "result.bin"}));

    // A writer that returns without producing anything is a failure too, not an empty file.
    const std::string other = join(dir.path(), "never.bin");
    EXPECT_ERROR_MENTIONING(writeFileAtomically(other, [](const std::string&) {}), QString::fromStdString(other));
    QCOMPARE(entriesOf(dir.path()), (QStringList{"neighbour.txt", "result.bin"}));
}

void TestSafetensors::overwriteFalseKeepsExistingFile()
{
    QTemporaryDir dir;
    const std::string target = join(dir.path(), "config.json");
    writeBytesAtomically(target, "first", false); // absent: allowed
    QCOMPARE(readAll(target), QByteArray("first"));
    EXPECT_ERROR_MENTIONING(writeBytesAtomically(target, "second", false),
                            (QStringList{QString::fromStdString(target), "already exists"}));
    QCOMPARE(readAll(target), QByteArray("first"));
    bool called = false;
    EXPECT_ERROR_MENTIONING(writeFileAtomically(target, [&](const std::string&) { called = true; }, false),
                            QString("already exists"));
    QVERIFY(!called); // refused before any work is done
    QCOMPARE(entriesOf(dir.path()), QStringList{"config.json"});
}

void TestSafetensors::overwriteReplacesFile()
{
    QTemporaryDir dir;
    const std::string target = join(dir.path(), "data.bin");
    QVERIFY(writeRaw(target, "old content that is longer"));
    writeBytesAtomically(target, std::string("new\0bytes", 9));
    QCOMPARE(readAll(target), QByteArray("new\0bytes", 9));
    writeBytesAtomically(target, "");
    QCOMPARE(readAll(target), QByteArray());
    QVERIFY(QFileInfo::exists(QString::fromStdString(target)));
    QCOMPARE(entriesOf(dir.path()), QStringList{"data.bin"});
}

void TestSafetensors::rewritingKeepsOpenMappingsIntact()
{
    // The writer replaces the file by rename, so a reader that still maps the old file keeps
    // seeing the old bytes (writing in place would change them under it or crash it).
    QTemporaryDir dir;
    const std::string path = join(dir.path(), "model.safetensors");
    const float before[2] = {1.0f, 2.0f};
    const float after[3] = {7.0f, 8.0f, 9.0f};
    writeSafetensors(path, {makeFloatTensor("w", Dtype::F32, {2}, before)});
    const auto old = SafetensorsFile::open(path);
    writeSafetensors(path, {makeFloatTensor("v", Dtype::F32, {3}, after)});
    QCOMPARE(old->find("w")->toFloat().values, std::vector<float>({1.0f, 2.0f}));
    const auto fresh = SafetensorsFile::open(path);
    QVERIFY(!fresh->find("w"));
    QCOMPARE(fresh->find("v")->toFloat().values, std::vector<float>({7.0f, 8.0f, 9.0f}));
    QCOMPARE(entriesOf(dir.path()), QStringList{"model.safetensors"});
}

QTEST_GUILESS_MAIN(TestSafetensors)
#include "test_safetensors.moc"
