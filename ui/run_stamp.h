#pragma once
// What produced a result, as every view compares it with the window's state (stale banners, chart
// stamps, the report's left_out).
#include <QMetaType>
#include <QString>
#include <QStringList>

#include "model/run_settings.h"

namespace scalescope::ui {

// What produced a result: the checkpoint, reference, mode and device in effect when the run was
// asked for. A view compares its result's stamp with the session's current one to know whether it
// still describes what the window shows as open.
struct RunStamp {
    enum class Reference { Dequant, Folder, CpuEmulation };
    QString checkpoint;  // folder; empty when nothing is open
    Reference referenceKind = Reference::Dequant;
    QString referenceFolder; // for Reference::Folder
    // How the run side computed: mode, accumulation (Dl16: the DL16 twin), attention, device ("cpu" or
    // "runner:COMMAND") and its what-if overrides (docs/ARCHITECTURE.md "Precision overrides"): every
    // floatLinears entry Float.
    RunSettings run;
    // The Linears run in float, by exact module name in layout order, and their short labels
    // ("L3.ffn.in") in the same order, for the words on screen; run.overrides holds the same names.
    QStringList floatLinears;
    QStringList floatLabels;

    bool isValid() const { return !checkpoint.isEmpty(); }
    // "2 Linears in float: L3.ffn.in, L7.attn.out" (at most `shown` labels, then "..."); empty
    // without overrides.
    QString floatText(int shown = 3) const;
    // "FP8", "Dequant", "FP8 + DL16", "FP8, FP8 attention": how a run is labelled on screen
    QString modeName() const;
    QString referenceText() const;
    QString deviceText() const;
    // One line for a stale banner or a chart stamp: "qa-fp8, FP8 vs qa-float, CPU" and, with
    // overrides, "; 1 Linear in float: L0.ffn.in".
    QString describe() const;
    // What differs between this and other, in words ("checkpoint", "mode and reference"); empty
    // when equal.
    QString differenceFrom(const RunStamp& other) const;
    friend bool operator==(const RunStamp& a, const RunStamp& b)
    {
        return a.checkpoint == b.checkpoint && a.referenceKind == b.referenceKind &&
               a.referenceFolder == b.referenceFolder && a.run == b.run && a.floatLinears == b.floatLinears;
    }
    friend bool operator!=(const RunStamp& a, const RunStamp& b) { return !(a == b); }
};

} // namespace scalescope::ui

Q_DECLARE_METATYPE(scalescope::ui::RunStamp)
