#include "coord/zookeeper/zookeeper_records.h"

namespace idforge::coord {
namespace {

class ZookeeperRecords final : public FleetRecords {
 public:
  ZookeeperRecords(std::function<Result<std::shared_ptr<ZkSession>>()> session, std::string dir,
                   std::string described)
      : session_(std::move(session)), dir_(std::move(dir)), described_(std::move(described)) {}

  Result<FleetRecord> read(std::string_view name) override {
    IDFORGE_RETURN_IF_ERROR(check_record_name(name));
    IDFORGE_ASSIGN_OR_RETURN(std::shared_ptr<ZkSession> s, session_());
    int32_t version = 0;
    return read_node(*s, path_of(name), &version);
  }

  Result<bool> replace(std::string_view name, const FleetRecord& expected, std::string_view value,
                       FleetRecord* now) override {
    IDFORGE_RETURN_IF_ERROR(check_record_name(name));
    IDFORGE_ASSIGN_OR_RETURN(std::shared_ptr<ZkSession> s, session_());
    const std::string path = path_of(name);
    int32_t version = 0;
    IDFORGE_ASSIGN_OR_RETURN(FleetRecord current, read_node(*s, path, &version));
    if (!(current == expected)) {
      *now = std::move(current);
      return false;
    }
    const ZkReply r =
        current.exists ? s->set(path, value, version) : s->create(path, value, /*ephemeral=*/false);
    if (r.ok()) return true;
    if (r.code != ZkCode::kBadVersion && r.code != ZkCode::kNodeExists) return r.status;
    // Someone wrote it between our read and our write.
    IDFORGE_ASSIGN_OR_RETURN(*now, read_node(*s, path, &version));
    return false;
  }

  std::string describe() const override { return described_; }

 private:
  std::string path_of(std::string_view name) const { return dir_ + "/" + std::string(name); }

  static Result<FleetRecord> read_node(const ZkSession& s, const std::string& path,
                                       int32_t* version) {
    std::string data;
    ZkNodeStat stat;
    const ZkReply r = s.get(path, &data, &stat);
    if (r.code == ZkCode::kNoNode) return FleetRecord{};
    if (!r.ok()) return r.status;
    *version = stat.version;
    return FleetRecord{true, std::move(data)};
  }

  const std::function<Result<std::shared_ptr<ZkSession>>()> session_;
  const std::string dir_;
  const std::string described_;
};

}  // namespace

std::unique_ptr<FleetRecords> make_zookeeper_records(
    std::function<Result<std::shared_ptr<ZkSession>>()> session, std::string dir,
    std::string described) {
  return std::make_unique<ZookeeperRecords>(std::move(session), std::move(dir),
                                            std::move(described));
}

}  // namespace idforge::coord
