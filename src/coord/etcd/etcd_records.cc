#include "coord/etcd/etcd_records.h"

namespace idforge::coord {
namespace {

class EtcdRecords final : public FleetRecords {
 public:
  EtcdRecords(EtcdClient& client, std::string prefix, std::string described)
      : client_(client), prefix_(std::move(prefix) + "fleet/"), described_(std::move(described)) {}

  Result<FleetRecord> read(std::string_view name) override {
    IDFORGE_RETURN_IF_ERROR(check_record_name(name));
    IDFORGE_ASSIGN_OR_RETURN(std::vector<EtcdKeyValue> found, client_.range(key_of(name)));
    return record_of(found);
  }

  Result<bool> replace(std::string_view name, const FleetRecord& expected, std::string_view value,
                       FleetRecord* now) override {
    IDFORGE_RETURN_IF_ERROR(check_record_name(name));
    const std::string key = key_of(name);
    const nlohmann::json compare = expected.exists ? etcd_txn::value_is(key, expected.value)
                                                   : etcd_txn::create_revision_is(key, 0);
    // Sent again after an unknown fate: the compare then fails on our own write, which
    // the caller reads as someone else's (it never takes a range twice).
    IDFORGE_ASSIGN_OR_RETURN(EtcdTxnResult result,
                             client_.txn({compare}, {etcd_txn::put(key, value)},
                                         {etcd_txn::get(key)}, EtcdRepeat::kSafe));
    if (result.succeeded) return true;
    *now = record_of(result.ranges.empty() ? std::vector<EtcdKeyValue>{} : result.ranges.front());
    return false;
  }

  std::string describe() const override { return described_; }

 private:
  std::string key_of(std::string_view name) const { return prefix_ + std::string(name); }
  static FleetRecord record_of(const std::vector<EtcdKeyValue>& found) {
    if (found.empty()) return FleetRecord{};
    return FleetRecord{true, found.front().value};
  }

  EtcdClient& client_;
  const std::string prefix_;
  const std::string described_;
};

}  // namespace

std::unique_ptr<FleetRecords> make_etcd_records(EtcdClient& client, std::string prefix,
                                                std::string described) {
  return std::make_unique<EtcdRecords>(client, std::move(prefix), std::move(described));
}

}  // namespace idforge::coord
