// Data a client scatters straight to this worker (update_data): the bytes are held as this
// worker's, as a peer's would be, and the client is told once they are, so that it tells the
// scheduler only about data that is in place. The scheduler never sees the bytes.
#include <taskwire/worker/data_server.hpp>

#include <spdlog/spdlog.h>

namespace taskwire::worker {

using protocol::Op;

void DataServer::take_client_data(runtime::OpReader& r, std::vector<ClientData>& out) {
  auto body = r.body<protocol::UpdateData>();
  if (body.keys.size() != r.frames().size())
    throw runtime::SerializationError("update_data with mismatched frames");
  ClientData update{body.request_id, {}};
  update.data.reserve(body.keys.size());
  for (std::size_t i = 0; i < body.keys.size(); ++i)
    update.data.emplace_back(std::move(body.keys[i]), r.frames()[i]);
  out.push_back(std::move(update));
}

// The state machine holds the data on the worker's strand; the answer (with any get_data
// replies of the same request) is written from there, and the next request read after it.
void DataServer::store_client_data(const comm::CommPtr& comm, std::vector<ClientData> updates,
                                   runtime::BatchWriter reply) {
  std::weak_ptr<comm::Comm> weak_comm = comm;
  auto store = [this, weak = core_.owner, weak_comm, updates = std::move(updates),
                reply = std::make_shared<runtime::BatchWriter>(std::move(reply))]() mutable {
    auto alive = weak.lock();
    auto comm = weak_comm.lock();
    if (!alive || !comm) return;
    std::vector<protocol::UpdateDataReply> answers;
    std::vector<Event> events;
    for (auto& u : updates) {
      protocol::UpdateDataReply answer{u.request_id, {}, {}};
      for (const auto& [key, frame] : u.data) answer.keys.push_back(key);
      answers.push_back(std::move(answer));
      events.emplace_back(UpdateDataEvent{std::move(u.data), ""});
    }
    actions_.handle(std::move(events));
    for (auto& answer : answers) {
      std::vector<protocol::Key> held;
      for (auto& key : answer.keys) {
        if (!core_.data->contains(key)) continue;  // closing, or a key computed here
        answer.nbytes.push_back(core_.data->nbytes(key));
        held.push_back(std::move(key));
      }
      answer.keys = std::move(held);
      spdlog::debug("worker {}: holds {} key(s) a client scattered", core_.name,
                    answer.keys.size());
      reply->add(Op::update_data_reply, answer);
    }
    reply_then_serve(comm, std::move(*reply));
  };
  asio::post(core_.strand, std::move(store));
}

}  // namespace taskwire::worker
