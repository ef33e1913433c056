// What reading a SQuAD file costs in memory: at most 4 times the file plus a constant, on a 60 MB
// file of empty objects (a DOM of it took 2.4 GB before its refusal) and on the real sample. Each
// read runs in a forked child, whose peak resident size (getrusage) is compared before and after
// the read; no time is measured.
#include <QtTest>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/error.h"
#include "support/fixtures.h"
#include "tasks/squad_dataset.h"

using namespace scalescope;
using namespace scalescope::testing;

namespace {

constexpr long long kConstantBytes = 8ll << 20;

long long peakResidentBytes()
{
    rusage usage {};
    ::getrusage(RUSAGE_SELF, &usage);
    return static_cast<long long>(usage.ru_maxrss) * 1024;
}

struct ReadCost {
    long long peakGrowth = -1; // bytes the peak resident size grew by while reading
    std::string outcome;       // the question count, or the reader's sentence
};

// Reads `path` in a child process and says how far its peak resident size rose.
ReadCost readInChild(const std::string& path)
{
    int channel[2];
    if (::pipe(channel) != 0)
        return {};
    const pid_t child = ::fork();
    if (child == 0) {
        ::close(channel[0]);
        const long long before = peakResidentBytes();
        std::string outcome;
        try {
            outcome = std::to_string(readSquadFile(path).examples.size()) + " questions";
        } catch (const Error& e) {
            outcome = e.what();
        }
        const std::string report = std::to_string(peakResidentBytes() - before) + "\n" + outcome;
        [[maybe_unused]] const ssize_t written = ::write(channel[1], report.data(), report.size());
        ::_exit(0);
    }
    ::close(channel[1]);
    std::string report;
    char buffer[4096];
    for (ssize_t got; (got = ::read(channel[0], buffer, sizeof buffer)) > 0;)
        report.append(buffer, std::size_t(got));
    ::close(channel[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    ReadCost cost;
    const std::size_t newline = report.find('\n');
    if (newline == std::string::npos)
        return cost;
    cost.peakGrowth = std::stoll(report.substr(0, newline));
    cost.outcome = report.substr(newline + 1);
    return cost;
}

} // namespace

class TestSquadMemory : public QObject {
    Q_OBJECT

private slots:
    void emptyObjectsCostLittleMoreThanTheFile()
    {
        const std::string path = makeTempDir("squad-memory") + "/empty-objects.json";
        std::uintmax_t size = 0;
        {
            std::ofstream out(path, std::ios::binary);
            out << "{\"data\":[{}";
            const std::string chunk = [] {
                std::string text;
                for (int i = 0; i < 4096; ++i)
                    text += ",{}";
                return text;
            }();
            for (std::size_t written = 0; written < 60'000'000; written += chunk.size())
                out << chunk;
            out << "]}";
        }
        size = std::filesystem::file_size(path);
        const ReadCost cost = readInChild(path);
        QVERIFY2(cost.outcome.find("data[0]: \"paragraphs\" is missing.") != std::string::npos, cost.outcome.c_str());
        qInfo("%llu bytes of empty objects: the peak rose by %lld bytes", static_cast<unsigned long long>(size),
              cost.peakGrowth);
        QVERIFY(cost.peakGrowth >= 0);
        QVERIFY2(cost.peakGrowth <= 4 * static_cast<long long>(size) + kConstantBytes,
                 qPrintable(QString::number(cost.peakGrowth)));
        std::filesystem::remove(path);
    }

    void theRealSampleCostsLittleMoreThanTheFile()
    {
        const std::string path = std::string(SCALESCOPE_SHARED_DATA) + "/squad/squad2-dev-sample.json";
        if (!std::filesystem::exists(path))
            QSKIP("the shared SQuAD sample is not here");
        const auto size = static_cast<long long>(std::filesystem::file_size(path));
        const ReadCost cost = readInChild(path);
        QCOMPARE(cost.outcome, std::string("626 questions"));
        qInfo("%lld bytes of SQuAD 2.0: the peak rose by %lld bytes", size, cost.peakGrowth);
        QVERIFY(cost.peakGrowth >= 0);
        QVERIFY2(cost.peakGrowth <= 4 * size + kConstantBytes, qPrintable(QString::number(cost.peakGrowth)));
    }
};

QTEST_GUILESS_MAIN(TestSquadMemory)
#include "test_squad_memory.moc"
