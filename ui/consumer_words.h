#pragma once
// What each runtime will do with a checkpoint, in the words inspect prints: "AIU: fails (fused:
// fails, unfused: as intended)". Triage, the saved-fix line and the Sensitivity tab say it the
// same way, so that the GUI and `inspect` never disagree about a checkpoint.
#include <QString>

#include <vector>

#include "analysis/consumers.h"

namespace scalescope::ui {

// "AIU", "vLLM", "transformers".
QString consumerTitle(Consumer consumer);
// One consumer's verdict with the AIU's per loading; html colours the overall verdict.
QString consumerVerdictText(const ConsumerReport& report, bool html);
// Every consumer, separated by "; ".
QString consumerVerdictsText(const std::vector<ConsumerReport>& reports, bool html);
// Whether a checkpoint is valid for every consumer, judged by their reports on the folder itself
// (a fix as written, not the original with a set kept float): "valid for every consumer (AIU: as
// intended ...)", else "not valid for AIU, vLLM (AIU: fails ...; ...)".
QString validityForConsumersText(const std::vector<ConsumerReport>& reports, bool html);

} // namespace scalescope::ui
