// The one device parser (CLI --device/--devices, the GUI's Device box): single devices, device lists
// with comments and blank lines, and the sentences for what it refuses; and the TaskOption errors
// that the CLI and GUI name in their own words.
#include <QtTest>

#include "common/error.h"
#include "common/option_error.h"
#include "device/device_spec.h"

using namespace scalescope;

namespace {

QString errorOf(const std::function<void()>& fn)
{
    try {
        fn();
    } catch (const Error& e) {
        return QString::fromUtf8(e.what());
    }
    return {};
}

} // namespace

class TestDeviceSpec : public QObject {
    Q_OBJECT

private slots:
    void singleDevices_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<bool>("cpu");
        QTest::addColumn<QString>("command");
        QTest::addColumn<QString>("error");
        QTest::newRow("cpu") << "cpu" << true << "" << "";
        QTest::newRow("runner") << "runner:ssh aiu-host run" << false << "ssh aiu-host run" << "";
        QTest::newRow("runner keeps quotes") << "runner:'/opt/a b/cli' runner" << false << "'/opt/a b/cli' runner" << "";
        QTest::newRow("empty runner") << "runner:  " << false << "" << "needs a command after the colon";
        QTest::newRow("unknown") << "gpu" << false << "" << "Unknown device \"gpu\"";
        QTest::newRow("case matters") << "CPU" << false << "" << "Unknown device \"CPU\"";
    }
    void singleDevices()
    {
        QFETCH(QString, text);
        QFETCH(bool, cpu);
        QFETCH(QString, command);
        QFETCH(QString, error);
        DeviceSpec spec;
        const QString message = errorOf([&] { spec = parseDeviceSpec(text.toStdString()); });
        if (!error.isEmpty()) {
            QVERIFY2(message.contains(error), qPrintable(message));
            return;
        }
        QVERIFY2(message.isEmpty(), qPrintable(message));
        QCOMPARE(spec.isCpu(), cpu);
        QCOMPARE(QString::fromStdString(spec.command), command);
        QCOMPARE(QString::fromStdString(parseDeviceSpec(spec.text()).text()), QString::fromStdString(spec.text()));
    }

    void deviceLists()
    {
        const auto devices = parseDeviceList("# two AIU hosts and this CPU\n\nrunner:ssh a run\n  runner:ssh b run  \r\ncpu\n",
                                             "devices.txt");
        QCOMPARE(devices.size(), std::size_t(3));
        QCOMPARE(devices[0].command, std::string("ssh a run"));
        QCOMPARE(devices[1].command, std::string("ssh b run")); // surrounding blanks and \r trimmed
        QVERIFY(devices[2].isCpu());

        QCOMPARE(errorOf([] { parseDeviceList("cpu\n\ntpu\n", "devices.txt"); }),
                 QStringLiteral("devices.txt line 3: Unknown device \"tpu\"; expected cpu or runner:COMMAND."));
        QVERIFY(errorOf([] { parseDeviceList("# nothing\n\n", "devices.txt"); }).contains("devices.txt names no device"));
        QVERIFY(errorOf([] { parseDeviceList("", "devices.txt"); }).contains("names no device"));
    }

    void optionErrorsNameTheOptionAsEachFrontEndDoes()
    {
        const OptionError error(TaskOption::MaxSeqLen, "{option} must be at least 8 tokens (got 3).");
        QCOMPARE(std::string(error.what()), std::string("The maximum sequence length must be at least 8 tokens (got 3)."));
        QCOMPARE(error.messageNaming("--max-seq-len"), std::string("--max-seq-len must be at least 8 tokens (got 3)."));
        QCOMPARE(error.option(), TaskOption::MaxSeqLen);
        const OptionError inside(TaskOption::DocStride, "The question is too long for {option} 9: {option}.");
        QCOMPARE(inside.messageNaming("X"), std::string("The question is too long for X 9: X."));
        // Other options by key, and hints in parentheses that only a front end's names spell out.
        const OptionError several(TaskOption::TargetF1Drop,
                                  "{option} needs a SQuAD file{(Squad)}; use {TargetSqnr} {not a key}.");
        QCOMPARE(std::string(several.what()),
                 std::string("The target F1 drop needs a SQuAD file; use the target SQNR {not a key}."));
        const auto flag = [](TaskOption option) { return "--" + optionKey(option); };
        QCOMPARE(several.messageNaming(flag),
                 std::string("--TargetF1Drop needs a SQuAD file (--Squad); use --TargetSqnr {not a key}."));
        // Only a sentence that starts with a name gets a capital (not one that starts with a path).
        const OptionError path(TaskOption::Overwrite, "out already exists; pass {option} to replace it.");
        QCOMPARE(std::string(path.what()), std::string("out already exists; pass overwrite to replace it."));
    }
};

QTEST_GUILESS_MAIN(TestDeviceSpec)
#include "test_device_spec.moc"
