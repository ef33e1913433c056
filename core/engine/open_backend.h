#pragma once
// Opening the backend a device names, in one place: what the CLI's --device and the GUI's Device box
// open. In the engine library (the CPU device is EncoderModel).
#include <memory>
#include <string>
#include <vector>

#include "device/device_spec.h"
#include "device/runner_backend.h"
#include "model/inference_backend.h"

namespace scalescope {

// EncoderModel in this process, or RunnerBackend with runnerOptions, on an open checkpoint.
std::unique_ptr<InferenceBackend> openBackend(const DeviceSpec& device, std::shared_ptr<const Checkpoint> checkpoint,
                                              const Progress& progress = {}, const RunnerOptions& runnerOptions = {});
// One device as above, or a BackendPool of several, each opened on the same checkpoint.
std::unique_ptr<InferenceBackend> openBackends(const std::vector<DeviceSpec>& devices,
                                               std::shared_ptr<const Checkpoint> checkpoint,
                                               const Progress& progress = {}, const RunnerOptions& runnerOptions = {});
// parseDeviceSpec(device), then the above on the checkpoint in checkpointDir.
std::unique_ptr<InferenceBackend> openBackend(const std::string& device, const std::string& checkpointDir,
                                              const Progress& progress = {});

} // namespace scalescope
