// Device selection in one place: what the CLI's --device and the GUI's Device box open.
#include "engine/open_backend.h"

#include "device/backend_pool.h"
#include "device/runner_backend.h"
#include "engine/encoder_model.h"

namespace scalescope {

std::unique_ptr<InferenceBackend> openBackend(const DeviceSpec& device, std::shared_ptr<const Checkpoint> checkpoint,
                                              const Progress& progress, const RunnerOptions& runnerOptions)
{
    if (device.isCpu())
        return EncoderModel::load(std::move(checkpoint), progress);
    return RunnerBackend::start(device, std::move(checkpoint), runnerOptions, progress);
}

std::unique_ptr<InferenceBackend> openBackends(const std::vector<DeviceSpec>& devices,
                                               std::shared_ptr<const Checkpoint> checkpoint, const Progress& progress,
                                               const RunnerOptions& runnerOptions)
{
    if (devices.size() == 1)
        return openBackend(devices.front(), std::move(checkpoint), progress, runnerOptions);
    std::vector<std::unique_ptr<InferenceBackend>> members;
    for (const DeviceSpec& device : devices)
        members.push_back(openBackend(device, checkpoint, progress, runnerOptions));
    return std::make_unique<BackendPool>(std::move(members));
}

std::unique_ptr<InferenceBackend> openBackend(const std::string& device, const std::string& checkpointDir,
                                              const Progress& progress)
{
    const DeviceSpec spec = parseDeviceSpec(device);
    return openBackend(spec, Checkpoint::open(checkpointDir), progress);
}

} // namespace scalescope
