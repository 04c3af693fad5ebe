#ifndef STREAMREG_SERVER_RPC_WIRE_CONVERSION_H_
#define STREAMREG_SERVER_RPC_WIRE_CONVERSION_H_

#include <span>
#include <vector>

#include "core/model/model.h"
#include "google/protobuf/repeated_field.h"
#include "server/hosting/hosted_model.h"
#include "server/hosting/read_after.h"
#include "streamreg/v1/model.pb.h"
#include "streamreg/v1/regression.pb.h"

namespace streamreg {

// Translations between the engine's results and the wire messages. Samples
// and queries are viewed in place (spans into the request), never copied.

Sample SampleFromWire(const v1::Sample& sample);
std::vector<Sample> SamplesFromWire(
    const google::protobuf::RepeatedPtrField<v1::Sample>& samples);
std::vector<std::span<const double>> QueriesFromWire(
    const google::protobuf::RepeatedPtrField<v1::Query>& queries);

void PredictionToWire(const Prediction& prediction, v1::Prediction* out);
// Stats plus what the service counts (duplicates) and the learn backlog,
// once every sample acknowledged before the call is learned or else as of
// `figures.deadline` (HostedModel::stats; as MetricToWire).
void StatsToWire(const HostedModel& hosted, const ReadAfter& figures,
                 v1::ModelStats* out);
// Name, spec in effect, stats and creation time.
void ModelToWire(const HostedModel& hosted, const ReadAfter& figures,
                 v1::Model* out);
void MetricToWire(const HostedModel& hosted, const ReadAfter& figures,
                  v1::MetricReport* out);

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_WIRE_CONVERSION_H_
