#pragma once
// The immutable results WorkbenchSession emits (one struct per kind of job), apart from the
// session, so a panel that shows a result needs this header and not the session's.
#include <QMetaType>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analysis/consumers.h"
#include "analysis/diagnostics.h"
#include "analysis/scale_statistics.h"
#include "model/checkpoint.h"
#include "model/linear_plan.h"
#include "run_stamp.h"
#include "tasks/checkpoint_diff.h"
#include "tasks/classify.h"
#include "tasks/compare_runs.h"
#include "tasks/device_check.h"
#include "tasks/embed.h"
#include "tasks/evaluate.h"
#include "tasks/fill_mask.h"
#include "tasks/question_answering.h"
#include "tasks/rerank.h"
#include "tasks/sensitivity.h"
#include "tasks/task_evaluation.h"

namespace scalescope {
struct CalibrationLabResult; // tasks/calibration_lab_result.h
}

namespace scalescope::ui {

// What the window shows about a freshly opened checkpoint.
struct CheckpointInfo {
    QString directory;
    std::shared_ptr<const Checkpoint> checkpoint;
    std::vector<LinearScaleStatistics> statistics;
    std::vector<Finding> findings;
    std::vector<ConsumerReport> consumers; // what the AIU stack, vLLM and transformers will do with it
    std::vector<LinearInfo> linears;
    bool runnable = true;      // false when the engine refused it (findings say why)
    QString loadError;         // the engine's sentence when not runnable
    double loadMs = 0;
    QString deviceName;        // the backend's own name ("CPU (in-process)", the runner's)
};

struct AskOutcome {
    RunStamp stamp;
    QString question, context;
    std::shared_ptr<const ComparisonResult> comparison; // holds windows and both sides' logits
    std::vector<QaAnswer> runAnswers, referenceAnswers; // n-best
    QaOptions options;
    std::map<int64_t, std::string> specialTokens;       // the windows' specials as the tokenizer spells them
};

struct FillMaskOutcome {
    RunStamp stamp;
    QString text;
    int topK = 5;
    std::shared_ptr<const ComparisonResult> comparison; // fillMask holds both sides per mask
    // Per mask, top-k with token texts, for display.
    std::vector<std::vector<MaskPrediction>> run, reference;
};

// The sequence tasks (embed, rerank, classify). Each also compares one of its inputs capture point
// by capture point (`comparison`, whose input `comparedInput` names in words), so that Errors,
// Scales, Triage and a sensitivity sweep work on these checkpoints as they do after a question.
struct EmbedOutcome {
    RunStamp stamp;
    QStringList texts;
    QString prompt; // as the user chose it: a prompt name of the checkpoint, a literal text or ""
    std::shared_ptr<const EmbedResult> result;
    std::shared_ptr<const ComparisonResult> comparison;
    QString comparedInput;
};

struct RerankOutcome {
    RunStamp stamp;
    QString query;
    QStringList passages;
    std::shared_ptr<const RerankResult> result;
    std::shared_ptr<const ComparisonResult> comparison;
    QString comparedInput;
};

struct ClassifyOutcome {
    RunStamp stamp;
    QString text, pair; // pair "" for a single text
    std::shared_ptr<const ClassifyResult> result;
    std::shared_ptr<const ComparisonResult> comparison;
    QString comparedInput;
};

// An evaluation of a sequence task on a dataset file (STS pairs, a BEIR folder, classification
// rows), as `evaluate --sts | --retrieval | --classification` runs it: the dataset read and the
// core's evaluation of it (exactly one of the three pairs is set, by `kind`).
enum class TaskDatasetKind { Sts, Retrieval, Classification };
struct TaskEvaluationOutcome {
    RunStamp stamp;
    TaskDatasetKind kind = TaskDatasetKind::Sts;
    QString path; // the file or folder evaluated
    std::shared_ptr<const StsDataset> stsDataset;
    std::shared_ptr<const StsEvaluation> sts;
    std::shared_ptr<const BeirDataset> beirDataset;
    std::shared_ptr<const RetrievalEvaluation> retrieval;
    std::shared_ptr<const ClassificationDataset> classificationDataset;
    std::shared_ptr<const ClassificationEvaluation> classification;
};

// Values of one capture point in the run and in the reference (for error histograms/scatter).
struct CapturePointValues {
    RunStamp stamp;
    QString name;
    std::vector<float> run, reference;
};

// What the Device check panel asks for (DESIGN "Device checks and gates"): the run under test is
// the selected device in fp8 mode, or, on the in-process CPU, the Mode box's mode; it is held
// against the twins (checkRunNames()) on the first maxQuestions questions of a SQuAD file.
struct DeviceCheckRequest {
    QString squadFile;
    int maxQuestions = 200;   // 0: all
    // Empty: thresholds from a noise floor (reference vs reference-fp16) measured on the same
    // questions first; otherwise a thresholds file written by noise-floor.
    QString thresholdsFile;
    QStringList twins;        // the first decides the verdict
    double maxFailureRate = 0.01;
    double maxF1Drop = 1.0;
};

struct DeviceCheckOutcome {
    RunStamp stamp;
    DeviceCheckRequest request;
    CheckResult result;
    // One line each, for the panel and the report: what ran as the run under test, where the
    // thresholds came from.
    QString runUnderTest;
    QString thresholdsSource;
    QString cacheNote; // how much of the CPU side came from the disk cache (tasks/forward_cache.h)
};

// File > Compare With...: a second checkpoint B beside the open one (A). The diff of the two
// (tasks/checkpoint_diff.h), B's scale statistics, and, when an input ran on A, B's fp8 run on the
// same input against the same reference as A's run (null otherwise).
struct CompareWithOutcome {
    RunStamp stamp;                                    // A's state it was made in
    QString directory;
    std::shared_ptr<const Checkpoint> checkpoint;
    std::vector<LinearScaleStatistics> statistics;
    std::shared_ptr<const CheckpointDiff> diff;
    std::shared_ptr<const ComparisonResult> comparison;
};

} // namespace scalescope::ui

Q_DECLARE_METATYPE(std::shared_ptr<const scalescope::ui::CheckpointInfo>)
Q_DECLARE_METATYPE(std::shared_ptr<const scalescope::ui::AskOutcome>)
Q_DECLARE_METATYPE(std::shared_ptr<const scalescope::ui::FillMaskOutcome>)
Q_DECLARE_METATYPE(std::shared_ptr<const scalescope::ui::CapturePointValues>)
Q_DECLARE_METATYPE(std::shared_ptr<const scalescope::ui::EmbedOutcome>)
Q_DECLARE_METATYPE(std::shared_ptr<const scalescope::ui::RerankOutcome>)
Q_DECLARE_METATYPE(std::shared_ptr<const scalescope::ui::ClassifyOutcome>)
Q_DECLARE_METATYPE(std::shared_ptr<const scalescope::EvaluationResult>)
Q_DECLARE_METATYPE(std::shared_ptr<const scalescope::ui::TaskEvaluationOutcome>)
Q_DECLARE_METATYPE(std::shared_ptr<const scalescope::ui::DeviceCheckOutcome>)
Q_DECLARE_METATYPE(std::shared_ptr<const scalescope::SensitivityEntry>)
Q_DECLARE_METATYPE(std::shared_ptr<const scalescope::SensitivityResult>)
Q_DECLARE_METATYPE(std::shared_ptr<const scalescope::ui::CompareWithOutcome>)
Q_DECLARE_METATYPE(std::shared_ptr<const scalescope::CalibrationLabResult>)
