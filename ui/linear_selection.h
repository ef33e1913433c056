#pragma once
// The Linear the user is looking at, shared by every view (docs/ARCHITECTURE.md "ui"): the Model
// tree and tensor table, a chart bar in Scales or Errors, a finding, a sweep bar, the triage list.
// A view that the user clicks calls select(); every view follows through selected(). Selecting
// the current Linear again does nothing, so a view that echoes the selection back (its own
// selection model firing) cannot start a loop.
#include <QObject>
#include <QString>

#include <functional>

namespace scalescope::ui {

class LinearSelection : public QObject {
    Q_OBJECT
public:
    using QObject::QObject;

    // The Hugging Face module name ("roberta.encoder.layer.3.output.dense"); empty for none.
    QString current() const { return current_; }
    // Module names of a runtime unit ("...attention.self") are taken as they are; a tensor name
    // ("...dense.weight", "...dense.input_scale") selects its module.
    void select(const QString& module);
    // Another checkpoint opened: nothing is selected.
    void clear();
    // A view that shows one Linear at a time follows the selection: `show` gets every Linear
    // selected while `view` lives. A cleared selection leaves the view on the Linear it shows.
    void follow(QObject* view, std::function<void(const QString&)> show);

    // The part of a tensor name that names its module; a module name as it is.
    static QString moduleOf(const QString& subject);

signals:
    void selected(const QString& module);

private:
    QString current_;
};

} // namespace scalescope::ui
