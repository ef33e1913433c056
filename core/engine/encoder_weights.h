#pragma once
// Core-private (LibTorch): the compute weights of an encoder, decoded once at load into float32 in
// the layout the matmuls use. float32 tensors of the file are used in place (the mapping lives as
// long as the checkpoint); FP8 weights are decoded with their scales. Only engine .cpp files include
// this header.
#include <ATen/ATen.h>

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/progress.h"
#include "engine/fp8_gemm.h"
#include "model/checkpoint.h"

namespace scalescope {

// The operands of a Linear on DL16 accumulation (numerics/dl16.h): the weight codes' values,
// flushed as DL8 holds them and transposed to [in, out], and one weight scale per output channel
// (as stored, or half-rounded for fp16 mode), for dl16::dl16Linear.
struct Dl16Weight {
    std::vector<float> valuesT;
    std::vector<float> scales;
    int64_t in = 0, out = 0;
};

struct LinearWeights {
    LinearInfo info;
    // [out, in] float32. Undefined after load when the factored GEMM serves fp8 mode: then only
    // dequant mode, float overrides and the float32 path need it, and floatWeight() decodes it on
    // first use (a compare against a float reference never does, which saves its memory).
    mutable at::Tensor weight;
    std::function<at::Tensor()> decodeWeight; // set when `weight` was deferred
    at::Tensor bias;   // [out] float32, or undefined
    // fp8 mode's factored GEMM (fp8_gemm.h: bf16, or float32 sources where forced) when that path
    // was on at load and the Linear's scheme factors (FP8 weight with tensor/channel scales, FP8
    // activations); null otherwise: the float32 path.
    std::shared_ptr<const Fp8FactoredGemm> factoredGemm;
    // The dl16 operands, made on the first forward with Accumulation::Dl16 (dl16Weight()); only
    // Linears for which accumulatesInDl16() holds have a maker.
    mutable std::shared_ptr<const Dl16Weight> dl16;
    std::function<Dl16Weight()> makeDl16;
};

struct LayerWeights {
    LinearWeights query, key, value, attentionOutput, intermediate, output;
    at::Tensor attentionNormWeight, attentionNormBias, outputNormWeight, outputNormBias;
    // q, k and v read the same input. When they also treat it the same way (same quantization),
    // one quantization and one GEMM over the stacked weights [3h, h] serve all three: a wider GEMM
    // runs closer to the BLAS peak. query/key/value.weight are then views into qkvWeight.
    bool fusedQkv = false;
    mutable at::Tensor qkvWeight; // undefined until fusedQkvWeight() when the members' weights were deferred
    at::Tensor qkvBias;
    std::shared_ptr<const Fp8FactoredGemm> qkvFactoredGemm; // the fused factored GEMM (see LinearWeights)
};

struct EncoderWeights {
    at::Tensor wordEmbeddings, positionEmbeddings, tokenTypeEmbeddings;
    // The fp16 twin of a model with float word embeddings and no tied decoder shares the stored
    // table (150 MB at roberta-base) and rounds the rows a forward gathers to half: the same values
    // as gathering from a rounded table.
    bool roundWordEmbeddingsOnLookup = false;
    at::Tensor embeddingNormWeight, embeddingNormBias;
    std::vector<LayerWeights> layers;
    // The head's Linears by module name and its LayerNorms' weight and bias by tensor prefix, as its
    // HeadDefinition (model/architecture.h) names them.
    std::map<std::string, LinearWeights> headLinears;
    std::map<std::string, std::pair<at::Tensor, at::Tensor>> headNorms;
};

// The float32 weight of a Linear, and the stacked [3h, h] weight of a fused q/k/v, decoded on first
// use when loading deferred them (see LinearWeights::weight).
const at::Tensor& floatWeight(const LinearWeights& linear);
const at::Tensor& fusedQkvWeight(const LayerWeights& layer);
// A Linear's dl16 operands, made on first use; throws when the Linear has none (see makeDl16).
const Dl16Weight& dl16Weight(const LinearWeights& linear);

// Whether this Linear's fp8-mode GEMM is the factored one (fp8_gemm.h) for models loaded now.
bool runsFactored(const LinearInfo& info);

// How the engine holds the stored parameters: as the file has them, or rounded to IEEE half as a
// float16 device stores them (fp16 mode, docs/ARCHITECTURE.md "Run modes"): every float tensor, bias and
// LayerNorm parameter, and the FP8 Linears' weight and input scales (FP8 codes stay exact, and
// decode(q) * half(scale) is not rounded again).
enum class StoredPrecision { AsStored, Half };

// A float Linear of another checkpoint (a float reference) as the engine runs it: its weight
// [out, in] and bias [out] (undefined when it has none), checked against the layout's shape.
// Throws naming the reference's file and tensor.
struct ReferenceLinear {
    at::Tensor weight, bias;
};
ReferenceLinear loadReferenceLinear(const Checkpoint& reference, const LayoutLinear& shape, StoredPrecision precision);

// Throws scalescope::Error naming the tensor and the problem; Cancelled on the cancel flag.
// codesFrom: weights of the same checkpoint loaded before (the stored ones, when the fp16 twin is
// made): their factored GEMMs lend their converted codes, which do not depend on the precision,
// so only the scales and biases are made again (170 MB less at roberta-base).
EncoderWeights loadEncoderWeights(const Checkpoint& checkpoint, const Progress& progress,
                                  StoredPrecision precision = StoredPrecision::AsStored,
                                  const EncoderWeights* codesFrom = nullptr);

} // namespace scalescope
