#include "linear_selection.h"

#include <QStringList>

namespace scalescope::ui {

QString LinearSelection::moduleOf(const QString& subject)
{
    // The tensors a Linear owns in a compressed-tensors checkpoint.
    static const QStringList kSuffixes = {
        QStringLiteral(".weight"), QStringLiteral(".bias"), QStringLiteral(".weight_scale"),
        QStringLiteral(".input_scale"), QStringLiteral(".weight_zero_point"), QStringLiteral(".input_zero_point"),
    };
    for (const QString& suffix : kSuffixes)
        if (subject.endsWith(suffix))
            return subject.chopped(suffix.size());
    return subject;
}

void LinearSelection::select(const QString& module)
{
    const QString name = moduleOf(module);
    if (name == current_)
        return;
    current_ = name;
    emit selected(current_);
}

void LinearSelection::follow(QObject* view, std::function<void(const QString&)> show)
{
    connect(this, &LinearSelection::selected, view, [show = std::move(show)](const QString& module) {
        if (!module.isEmpty())
            show(module);
    });
}

void LinearSelection::clear()
{
    if (current_.isEmpty())
        return;
    current_.clear();
    emit selected(current_);
}

} // namespace scalescope::ui
