// Outputs (issue 30 item 3): who may remove a temporary left beside an output, a folder written by
// two runs at once, temporaries removed when SIGINT or SIGTERM ends the writer, and writes refused
// by the file system (RLIMIT_FSIZE in a child process stands in for a full disk). Everything
// happens in private temporary folders; the signals and limits are set in forked children only.
#include <QtTest>

#include <fstream>
#include <future>
#include <thread>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "common/option_error.h"
#include "io/atomic_write.h"
#include "io/checkpoint_destination.h"
#include "io/interrupt_cleanup.h"
#include "io/output_folder.h"
#include "io/sha256.h"
#include "io/temporary_owner.h"
#include "support/fixtures.h"

using namespace scalescope;
using namespace scalescope::testing;

namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

std::string readAll(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeAll(const std::string& path, const std::string& bytes)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
}

// Everything in dir, hidden entries included, sorted.
QStringList entriesOf(const std::string& dir)
{
    QStringList names = QDir(q(dir)).entryList(QDir::Hidden | QDir::System | QDir::AllEntries | QDir::NoDotAndDotDot);
    names.sort();
    return names;
}

// The pid of a process that has certainly ended (its child reaped).
long deadPid()
{
    const pid_t child = ::fork();
    if (child == 0)
        ::_exit(0);
    ::waitpid(child, nullptr, 0);
    return child;
}

void makeOld(const std::string& path)
{
    const timespec twoDaysAgo{::time(nullptr) - 2 * 24 * 3600, 0};
    const timespec times[2] = {twoDaysAgo, twoDaysAgo};
    QCOMPARE(::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW), 0);
}

// Runs body in a forked child and returns its wait status. The child never returns into the test.
int inChild(const std::function<void()>& body)
{
    const pid_t child = ::fork();
    if (child == 0) {
        try {
            body();
        } catch (...) {
            ::_exit(3);
        }
        ::_exit(0);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    return status;
}

std::string firstLineOf(const std::string& path)
{
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

} // namespace

class TestOutputs : public QObject {
    Q_OBJECT

private slots:
    // ---- the owner in a temporary's name --------------------------------------------------

    void ownerTagNamesThisBootAndPidNamespace()
    {
        char space[256] = {};
        QVERIFY(::readlink("/proc/self/ns/pid", space, sizeof space - 1) > 0);
        const std::string bootId = firstLineOf("/proc/sys/kernel/random/boot_id");
        QVERIFY(!bootId.empty());
        QCOMPARE(thisHostTag(), sha256Hex(bootId + "\n" + space).substr(0, 16));
        QCOMPARE(temporaryOwnerTag(), thisHostTag() + "-" + std::to_string(::getpid()));

        const auto owner = parseTemporaryOwner(temporaryOwnerTag());
        QVERIFY(owner.has_value());
        QCOMPARE(owner->host, thisHostTag());
        QCOMPARE(owner->pid, static_cast<long>(::getpid()));
        for (const char* malformed : {"424243", "424243-1", "0123456789abcde-12", "0123456789ABCDEF-12",
                                      "0123456789abcdef-", "0123456789abcdef-012", "0123456789abcdef-12-3",
                                      "0123456789abcdef-1234567890", "keep"})
            QVERIFY2(!parseTemporaryOwner(malformed), malformed);
    }

    // A sweep removes what a writer on this host and in this PID namespace left when it died, and
    // what a writer elsewhere left untouched for a day; never what another container is still
    // writing, never what a live writer here holds, and never a name it did not make.
    void staleSweepRemovesOnlyAbandonedTemporaries()
    {
        const std::string dir = makeTempDir("outputs-stale");
        const std::string here = thisHostTag();
        const std::string elsewhere = here == "0123456789abcdef" ? "fedcba9876543210" : "0123456789abcdef";
        const std::string dead = std::to_string(deadPid());

        const std::string deadHere = dir + "/.out.csv.tmp-" + here + "-" + dead + "-3";
        const std::string deadHereFolder = dir + "/.model.partial-" + here + "-" + dead;
        const std::string liveHere = dir + "/.out.csv.tmp-" + here + "-" + std::to_string(::getppid()) + "-1";
        // Another container's writer: its pid means nothing here.
        const std::string writingElsewhere = dir + "/.out.csv.tmp-" + elsewhere + "-" + dead + "-1";
        const std::string buildingElsewhere = dir + "/.fp8.partial-" + elsewhere + "-" + dead;
        const std::string abandonedElsewhere = dir + "/.old.csv.tmp-" + elsewhere + "-" + dead + "-2";
        const std::string abandonedElsewhereFolder = dir + "/.bf16.partial-" + elsewhere + "-" + dead;
        // A user's own files of the shape the sweep used to take for temporaries.
        const std::string userFile = dir + "/.notes.tmp-" + dead + "-1";
        const std::string userFolder = dir + "/.photos.partial-" + dead;

        writeAll(deadHere, std::string(4096, 'x'));
        QVERIFY(QDir().mkpath(q(deadHereFolder)));
        writeAll(deadHereFolder + "/model.safetensors", "partial");
        writeAll(liveHere, "a writer that still runs");
        makeOld(liveHere); // however long it has been quiet
        writeAll(writingElsewhere, "being written in another container");
        QVERIFY(QDir().mkpath(q(buildingElsewhere)));
        writeAll(buildingElsewhere + "/model.safetensors", "a file written just now");
        makeOld(buildingElsewhere); // the folder is old, what it holds is not
        writeAll(abandonedElsewhere, "left two days ago");
        makeOld(abandonedElsewhere);
        QVERIFY(QDir().mkpath(q(abandonedElsewhereFolder)));
        writeAll(abandonedElsewhereFolder + "/model.safetensors", "left two days ago");
        makeOld(abandonedElsewhereFolder + "/model.safetensors");
        makeOld(abandonedElsewhereFolder);
        writeAll(userFile, "mine");
        QVERIFY(QDir().mkpath(q(userFolder)));
        writeAll(userFolder + "/beach.jpg", "mine too");

        writeBytesAtomically(dir + "/other.txt", "new");

        QVERIFY(!QFileInfo::exists(q(deadHere)));
        QVERIFY(!QFileInfo::exists(q(deadHereFolder)));
        QVERIFY(!QFileInfo::exists(q(abandonedElsewhere)));
        QVERIFY(!QFileInfo::exists(q(abandonedElsewhereFolder)));
        QVERIFY(QFileInfo::exists(q(liveHere)));
        QVERIFY(QFileInfo::exists(q(writingElsewhere)));
        QCOMPARE(readAll(buildingElsewhere + "/model.safetensors"), std::string("a file written just now"));
        QCOMPARE(readAll(userFile), std::string("mine"));
        QCOMPARE(readAll(userFolder + "/beach.jpg"), std::string("mine too"));
        QCOMPARE(readAll(dir + "/other.txt"), std::string("new"));
    }

    // The parked old destination of a replacement is put back only when its owner abandoned it.
    void parkedDestinationOfAnotherContainerIsLeftAlone()
    {
        const std::string root = makeTempDir("outputs-parked");
        const std::string elsewhere = thisHostTag() == "0123456789abcdef" ? "fedcba9876543210" : "0123456789abcdef";
        const std::string parked = root + "/.fp8.old-" + elsewhere + "-" + std::to_string(deadPid());
        QVERIFY(QDir().mkpath(q(parked)));
        writeAll(parked + "/config.json", "{}");
        try {
            prepareCheckpointDestination(root + "/fp8", {}, false, "quantize");
        } catch (const Error& e) {
            QFAIL(e.what()); // it was put back as DST, which now "already exists"
        }
        QVERIFY(!QFileInfo::exists(q(root + "/fp8"))); // not taken for this host's leftover
        QCOMPARE(readAll(parked + "/config.json"), std::string("{}"));
    }

    // ---- two writers, one folder ------------------------------------------------------------

    void twoWritersIntoOneFolder_data()
    {
        QTest::addColumn<bool>("overwrite");
        QTest::addColumn<QString>("secondName");
        // --force: both runs would replace every file, each other's too.
        QTest::newRow("overwrite, same files") << true << "chart.png";
        // Without --force: both pass the exists-check, and the second adds its own chart.
        QTest::newRow("no overwrite, other charts") << false << "other.png";
    }

    // The first writer is held inside its first file while the second one runs from start to end:
    // exactly one of them writes, and the folder holds that one's files only.
    void twoWritersIntoOneFolder()
    {
        QFETCH(bool, overwrite);
        QFETCH(QString, secondName);
        const std::string dir = makeTempDir("outputs-concurrent") + "/plots";
        std::promise<void> firstIsWriting, secondIsDone;
        std::shared_future<void> secondDone = secondIsDone.get_future().share();
        const std::vector<OutputFile> first = {
            {"chart.png", [&] {
                 firstIsWriting.set_value();
                 secondDone.wait();
                 return std::string("first chart");
             }},
            {"chart.csv", [] { return std::string("first table"); }},
            {"compare.json", [] { return std::string("first numbers"); }}};
        const std::vector<OutputFile> second = {{secondName.toStdString(), [] { return std::string("second chart"); }},
                                                {"chart.csv", [] { return std::string("second table"); }},
                                                {"compare.json", [] { return std::string("second numbers"); }}};

        std::string firstError;
        std::thread firstWriter([&] {
            try {
                writeOutputFolder(dir, first, overwrite);
            } catch (const Error& e) {
                firstError = e.what();
            }
        });
        firstIsWriting.get_future().wait();
        std::string secondError;
        try {
            writeOutputFolder(dir, second, overwrite);
        } catch (const Error& e) {
            secondError = e.what();
        }
        secondIsDone.set_value();
        firstWriter.join();

        QVERIFY2(firstError.empty() != secondError.empty(),
                 qPrintable("first: " + q(firstError) + " / second: " + q(secondError)));
        const bool firstWrote = firstError.empty();
        const std::string who = firstWrote ? "first" : "second";
        QStringList expected = {"chart.csv", "compare.json", firstWrote ? "chart.png" : secondName};
        expected.sort();
        QCOMPARE(entriesOf(dir), expected);
        QCOMPARE(readAll(dir + "/chart.csv"), who + " table");
        QCOMPARE(readAll(dir + "/compare.json"), who + " numbers");
        QVERIFY2(q(secondError).contains("another ScaleScope run is writing there"), qPrintable(q(secondError)));
    }

    void writtenFolderHoldsOnlyItsFiles()
    {
        const std::string dir = makeTempDir("outputs-folder") + "/new/plots";
        const std::vector<std::string> paths =
            writeOutputFolder(dir, {{"a.csv", [] { return std::string("a"); }}, {"b.json", [] { return std::string("b"); }}}, false);
        QCOMPARE(paths, (std::vector<std::string>{dir + "/a.csv", dir + "/b.json"}));
        QCOMPARE(entriesOf(dir), (QStringList{"a.csv", "b.json"}));
        // Again without overwrite: refused before anything is made or written.
        bool made = false;
        try {
            writeOutputFolder(dir, {{"c.csv", [&] { made = true; return std::string("c"); }},
                                    {"b.json", [&] { made = true; return std::string("new"); }}},
                              false);
            QFAIL("an existing file was not refused");
        } catch (const OptionError& e) {
            QCOMPARE(e.option(), TaskOption::Overwrite);
            QVERIFY2(q(e.what()).contains(q(dir + "/b.json") + " already exists"), e.what());
        }
        QVERIFY(!made);
        QCOMPARE(entriesOf(dir), (QStringList{"a.csv", "b.json"}));
        QCOMPARE(readAll(dir + "/b.json"), std::string("b"));
    }

    // ---- SIGINT and SIGTERM while writing ----------------------------------------------------

    void interruptRemovesTemporaries_data()
    {
        QTest::addColumn<int>("signal");
        QTest::newRow("SIGTERM") << int(SIGTERM);
        QTest::newRow("SIGINT") << int(SIGINT);
    }

    // A file being written (forward --output, a plot), and a checkpoint folder being built
    // (quantize, keep-float) with a file being written inside it: the signal arrives in the middle,
    // the process dies of it, and nothing of the outputs is left.
    void interruptRemovesTemporaries()
    {
        QFETCH(int, signal);
        const std::string dir = makeTempDir("outputs-interrupt");
        const int fileStatus = inChild([&] {
            installInterruptCleanup(nullptr);
            writeFileAtomically(dir + "/out.safetensors", [&](const std::string& temporary) {
                writeAll(temporary, std::string(1 << 20, 'x'));
                ::raise(signal);
            });
        });
        QVERIFY2(WIFSIGNALED(fileStatus) && WTERMSIG(fileStatus) == signal, qPrintable(QString::number(fileStatus)));
        QCOMPARE(entriesOf(dir), QStringList());

        const int folderStatus = inChild([&] {
            installInterruptCleanup(nullptr);
            const CheckpointDestination destination = prepareCheckpointDestination(dir + "/fp8", {}, false, "quantize");
            writeCheckpointFolder(destination, [&](const std::string& folder) {
                writeBytesAtomically(folder + "/model.safetensors", std::string(1 << 20, 'w'));
                writeAll(folder + "/vocab.json", "{}");
                writeFileAtomically(folder + "/config.json", [&](const std::string& temporary) {
                    writeAll(temporary, "{");
                    ::raise(signal);
                });
            });
        });
        QVERIFY2(WIFSIGNALED(folderStatus) && WTERMSIG(folderStatus) == signal, qPrintable(QString::number(folderStatus)));
        QCOMPARE(entriesOf(dir), QStringList());
    }

    // The handler's first step (the CLI stops its runners there) runs before the removal, and a
    // registration that ended is not removed.
    void interruptRunsFirstStepAndSparesFinishedOutputs()
    {
        const std::string dir = makeTempDir("outputs-first-step");
        static std::string marker;
        marker = dir + "/first-step-ran";
        const int status = inChild([&] {
            installInterruptCleanup([] { ::close(::open(marker.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600)); });
            writeBytesAtomically(dir + "/done.csv", "finished");
            { const InterruptCleanup ended(dir + "/done.csv", TemporaryKind::File); }
            ::raise(SIGTERM);
        });
        QVERIFY(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
        QCOMPARE(entriesOf(dir), (QStringList{"done.csv", "first-step-ran"}));
    }

    // ---- a file system that refuses bytes -------------------------------------------------------

    // RLIMIT_FSIZE makes write() fail with EFBIG past the limit, as a full disk fails with ENOSPC:
    // the error names the file and nothing is left under the final name or as a temporary.
    void refusedBytesLeaveNoFile()
    {
        const std::string dir = makeTempDir("outputs-fsize");
        const int status = inChild([&] {
            ::signal(SIGXFSZ, SIG_IGN);
            const rlimit limit{64 * 1024, 64 * 1024};
            ::setrlimit(RLIMIT_FSIZE, &limit);
            try {
                writeBytesAtomically(dir + "/big.png", std::string(1 << 20, 'p'));
            } catch (const Error& e) {
                ::_exit(std::string(e.what()).find(dir + "/big.png") != std::string::npos ? 0 : 4);
            }
            ::_exit(5);
        });
        QVERIFY2(WIFEXITED(status) && WEXITSTATUS(status) == 0, qPrintable(QString::number(status)));
        QCOMPARE(entriesOf(dir), QStringList());
    }
};

QTEST_APPLESS_MAIN(TestOutputs)
#include "test_outputs.moc"
