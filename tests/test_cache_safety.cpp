// Caches and sweeps that delete: each removes only what it can prove it wrote. Every cache and
// temporary-folder setting is pointed at a folder that holds a user's checkpoint and other files
// of theirs, links among them, and names that look like the program's own; nothing of the user's
// may go.
#include <QtTest>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "device/runner_backend.h"
#include "engine/calibration_lab.h"
#include "engine/runner_cache.h"
#include "io/atomic_write.h"
#include "io/sha256.h"
#include "io/temporary_owner.h"
#include "support/fixtures.h"
#include "tasks/forward_cache.h"

using namespace scalescope;
using namespace scalescope::testing;
namespace fs = std::filesystem;

namespace {

const std::string kHash = std::string(64, 'a');

void writeFile(const std::string& path, const std::string& text)
{
    std::ofstream(path, std::ios::binary) << text;
}

std::string fileText(const fs::path& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// Every entry under root, links not followed: its kind and, for a file its bytes' SHA-256, for a
// link its target.
std::map<std::string, std::string> contentsOf(const fs::path& root)
{
    std::map<std::string, std::string> contents;
    for (fs::recursive_directory_iterator it(root), end; it != end; ++it) {
        const std::string relative = fs::relative(it->path(), root).string();
        const fs::file_status status = it->symlink_status();
        if (fs::is_symlink(status))
            contents[relative] = "link to " + fs::read_symlink(it->path()).string();
        else if (fs::is_directory(status))
            contents[relative] = "folder";
        else
            contents[relative] = "file " + sha256Hex(fileText(it->path()));
    }
    return contents;
}

// What of `before` is missing or changed in `after`, one line each ("" when nothing).
std::string lostOrChanged(const std::map<std::string, std::string>& before, const std::map<std::string, std::string>& after)
{
    std::string lost;
    for (const auto& [path, what] : before) {
        const auto it = after.find(path);
        if (it == after.end())
            lost += path + " was deleted\n";
        else if (it->second != what)
            lost += path + " changed: " + what + " -> " + it->second + "\n";
    }
    return lost;
}

// A pid of this host that no longer runs: a child that has exited and been reaped.
long goneProcessId()
{
    const pid_t child = ::fork();
    if (child == 0)
        ::_exit(0);
    int status = 0;
    ::waitpid(child, &status, 0);
    return long(child);
}

std::string goneOwnerTag()
{
    return thisHostTag() + "-" + std::to_string(goneProcessId());
}

CachedForward smallForward()
{
    CachedForward forward;
    forward.outputs.push_back({"logits", FloatTensor{{2, 3}, {1, 2, 3, 4, 5, 6}}});
    return forward;
}

EncoderInputs smallInputs(int64_t id)
{
    EncoderInputs inputs;
    inputs.inputIds = {{0, id, 2}};
    return inputs;
}

} // namespace

class TestCacheSafety : public QObject {
    Q_OBJECT

    std::string floatDir_;
    std::string outside_; // a folder of the user's beside the one the settings name

    // A user's folder: a checkpoint, one in a subfolder, notes, links in and out, and names of the
    // program's own forms (a cache entry, an upload or exchange folder) that the program never wrote.
    std::string userFolder(const std::string& name)
    {
        const std::string folder = makeTempDir(name);
        for (const fs::directory_entry& file : fs::directory_iterator(floatDir_))
            fs::copy_file(file.path(), fs::path(folder) / file.path().filename());
        fs::create_directory(folder + "/model");
        for (const fs::directory_entry& file : fs::directory_iterator(floatDir_))
            fs::copy_file(file.path(), fs::path(folder) / "model" / file.path().filename());
        writeFile(folder + "/notes.txt", "mine\n");
        writeFile(folder + "/" + std::string(64, 'b') + ".safetensors", "a file of mine with a cache entry's name");
        fs::create_symlink(outside_ + "/weights.safetensors", folder + "/linked.safetensors");
        fs::create_symlink(outside_, folder + "/" + kHash + ".partial-" + goneOwnerTag() + "-abcdef");
        fs::create_symlink(outside_, folder + "/scalescope-runner-" + goneOwnerTag() + "-abcdef");
        fs::create_directory(folder + "/" + kHash + ".partial-Xy12Zq"); // an older runner's, ownerless
        writeFile(folder + "/" + kHash + ".partial-Xy12Zq/model.safetensors", "half an upload");
        writeFile(folder + "/.notes.tmp-424243-1", "not a temporary of the program's");
        ::chmod(folder.c_str(), 0700); // the runner's cache refuses a folder others may write
        return folder;
    }

private slots:
    void initTestCase()
    {
        floatDir_ = makeTempDir("cache-safety-model");
        writeTinyFloatCheckpoint(floatDir_, TinyModelSpec{});
        outside_ = makeTempDir("cache-safety-outside");
        writeFile(outside_ + "/weights.safetensors", "the user's weights, outside the cache");
    }

    void checkCacheDoesNotUseAFolderOfTheUsers()
    {
        const std::string folder = userFolder("check-cache-users");
        const auto before = contentsOf(folder);
        ForwardCache cache({folder, 0}); // a cap of 0: everything is evicted that may be
        const std::string key = ForwardCache::key("checkpoint", "fp8", smallInputs(5));
        CachedForward loaded;
        QVERIFY(!cache.load(key, loaded));
        cache.store(key, smallForward());
        const std::string lost = lostOrChanged(before, contentsOf(folder));
        QVERIFY2(lost.empty(), lost.c_str());
        QVERIFY2(cache.problem().find(folder) != std::string::npos, cache.problem().c_str());
        QVERIFY(!fs::exists(fs::path(folder) / (key + ".safetensors")));
        QVERIFY(!fs::exists(fs::path(folder) / kForwardCacheMarker));
        QCOMPARE(fileText(outside_ + "/weights.safetensors"), std::string("the user's weights, outside the cache"));
    }

    void checkCacheEvictsOnlyItsOwnEntries()
    {
        const std::string folder = makeTempDir("check-cache-own") + "/cache";
        const std::string first = ForwardCache::key("checkpoint", "fp8", smallInputs(5));
        const std::string second = ForwardCache::key("checkpoint", "fp8", smallInputs(6));
        {
            ForwardCache cache({folder, 1ull << 30});
            cache.store(first, smallForward());
            QVERIFY2(cache.problem().empty(), cache.problem().c_str());
        }
        QVERIFY(fs::is_regular_file(fs::path(folder) / kForwardCacheMarker));
        QVERIFY(fs::is_regular_file(fs::path(folder) / (first + ".safetensors")));
        // Put there since: a user's file, and links named like entries to a file and a folder outside.
        writeFile(folder + "/model.safetensors", "the user's model");
        fs::create_symlink(outside_ + "/weights.safetensors", folder + "/" + std::string(64, 'c') + ".safetensors");
        fs::create_symlink(outside_, folder + "/" + std::string(64, 'd') + ".safetensors");
        // A link where a key's entry would be is not read (a miss) and not removed.
        const std::string linkedKey = ForwardCache::key("checkpoint", "fp8", smallInputs(7));
        fs::create_symlink(outside_ + "/weights.safetensors", folder + "/" + linkedKey + ".safetensors");
        const auto outsideBefore = contentsOf(outside_);

        ForwardCache cache({folder, 0});
        CachedForward loaded;
        QVERIFY(!cache.load(linkedKey, loaded));
        cache.store(second, smallForward());
        QVERIFY2(cache.problem().empty(), cache.problem().c_str());
        // Its own entries are gone (the cap is 0); everything else stays.
        QVERIFY(!fs::exists(fs::path(folder) / (first + ".safetensors")));
        QVERIFY(!fs::exists(fs::path(folder) / (second + ".safetensors")));
        QCOMPARE(fileText(folder + "/model.safetensors"), std::string("the user's model"));
        QVERIFY(fs::is_symlink(folder + "/" + std::string(64, 'c') + ".safetensors"));
        QVERIFY(fs::is_symlink(folder + "/" + std::string(64, 'd') + ".safetensors"));
        QVERIFY(fs::is_symlink(folder + "/" + linkedKey + ".safetensors"));
        const std::string lostOutside = lostOrChanged(outsideBefore, contentsOf(outside_));
        QVERIFY2(lostOutside.empty(), lostOutside.c_str());
    }

    void runnerRemovesOnlyUploadsOfGoneSessions()
    {
        const std::string folder = makeTempDir("runner-cache-partials");
        ::chmod(folder.c_str(), 0700);
        const std::string stale = folder + "/" + kHash + ".partial-" + goneOwnerTag() + "-Ab12Cd";
        fs::create_directory(stale);
        writeFile(stale + "/model.safetensors", "half an upload of a runner killed during it");
        // A live process's (pid 1 runs), another host's, and an older version's without an owner stay.
        const std::string live = folder + "/" + kHash + ".partial-" + thisHostTag() + "-1-Ef34Gh";
        const std::string elsewhere = folder + "/" + kHash + ".partial-0123456789abcdef-" +
                                      std::to_string(goneProcessId()) + "-Ij56Kl";
        const std::string ownerless = folder + "/" + kHash + ".partial-Mn78Op";
        for (const std::string& path : {live, elsewhere, ownerless})
            fs::create_directory(path);

        RunnerCache cache(folder);
        QVERIFY(!cache.has(kHash));
        QVERIFY2(!fs::exists(stale), stale.c_str());
        for (const std::string& path : {live, elsewhere, ownerless})
            QVERIFY2(fs::is_directory(path), path.c_str());

        // This session's upload folder carries its owner, so that the next session can tell.
        const auto incoming = cache.receive(kHash, "model.safetensors", std::string(64, '0'));
        bool named = false;
        for (const fs::directory_entry& entry : fs::directory_iterator(folder))
            named = named || entry.path().filename().string().rfind(kHash + ".partial-" + temporaryOwnerTag() + "-", 0) == 0;
        QVERIFY(named);
    }

    void nothingOfTheUsersIsDeletedByAnyCacheOrSweep()
    {
        const std::string folder = userFolder("every-setting");
        const auto before = contentsOf(folder);
        const auto outsideBefore = contentsOf(outside_);

        qputenv("SCALESCOPE_CHECK_CACHE", QByteArray::fromStdString(folder));
        qputenv("SCALESCOPE_CHECK_CACHE_MB", "0");
        {
            ForwardCache cache; // from the environment
            QCOMPARE(cache.folder(), folder);
            const std::string key = ForwardCache::key("checkpoint", "fp8", smallInputs(5));
            CachedForward loaded;
            cache.load(key, loaded);
            cache.store(key, smallForward());
        }
        qunsetenv("SCALESCOPE_CHECK_CACHE");
        qunsetenv("SCALESCOPE_CHECK_CACHE_MB");

        {
            RunnerCache cache(folder); // SCALESCOPE_RUNNER_CACHE
            cache.has(kHash);
            cache.receive(kHash, "model.safetensors", std::string(64, '0')); // unfinished: removed
        }
        removeStaleExchangeFolders(folder); // SCALESCOPE_RUNNER_EXCHANGE_DIR, TMPDIR
        removeStaleTemporaries(folder);     // beside every output written

        const QByteArray tmpdir = qgetenv("TMPDIR");
        qputenv("TMPDIR", QByteArray::fromStdString(folder)); // calibrate's temporary checkpoints
        CalibrationLabOptions options;
        options.calibrationTexts = {"the cat sat on the mat", "a dog is on the mat"};
        options.evalTexts = {"Paris is the capital of France"};
        options.orders = 1;
        runCalibrationLab(floatDir_, options);
        if (tmpdir.isNull())
            qunsetenv("TMPDIR");
        else
            qputenv("TMPDIR", tmpdir);

        const std::string lost = lostOrChanged(before, contentsOf(folder));
        QVERIFY2(lost.empty(), lost.c_str());
        const std::string lostOutside = lostOrChanged(outsideBefore, contentsOf(outside_));
        QVERIFY2(lostOutside.empty(), lostOutside.c_str());
    }
};

QTEST_GUILESS_MAIN(TestCacheSafety)
#include "test_cache_safety.moc"
