#pragma once
// Answers the next modal file dialog from the event loop it runs, as a user would: types the whole
// path into its file name box and accepts. (selectFile() of a path in another folder lands
// asynchronously, through the dialog's file system model, and raced the accept.) Create it just
// before the click that opens the dialog; it stops once it has answered.
#include <QApplication>
#include <QFileDialog>
#include <QLineEdit>
#include <QTimer>

namespace scalescope::testing {

class FileDialogAnswer {
public:
    explicit FileDialogAnswer(const QString& path)
    {
        QObject::connect(&timer_, &QTimer::timeout, &timer_, [this, path] {
            auto* dialog = qobject_cast<QFileDialog*>(QApplication::activeModalWidget());
            auto* name = dialog ? dialog->findChild<QLineEdit*>(QStringLiteral("fileNameEdit")) : nullptr;
            if (!name)
                return;
            timer_.stop();
            name->setText(path);
            static_cast<QDialog*>(dialog)->accept(); // QFileDialog::accept is protected
        });
        timer_.start(20);
    }

private:
    QTimer timer_;
};

} // namespace scalescope::testing
