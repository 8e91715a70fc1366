#include "bridge/watch_table.hpp"

#include "bridge/zk_client.h"

namespace zklock::detail {

void watch_table::add(watch_kind kind, const std::string& path, const std::shared_ptr<watch_state>& w)
{
    table& t = kind == watch_kind::data ? data_ : kind == watch_kind::exist ? exist_ : child_;
    auto& v = t[path];
    std::erase_if(v, [](const std::weak_ptr<watch_state>& x) { return x.expired(); });
    v.push_back(w);
}

void watch_table::fire(table& t, const std::string& path, watch_event ev)
{
    auto it = t.find(path);
    if (it == t.end()) return;
    auto list = std::move(it->second);
    t.erase(it);
    for (auto& w : list)
        if (auto s = w.lock()) s->fire({}, ev);
}

void watch_table::deliver(int type, const std::string& path)
{
    if (type == ZOO_CREATED_EVENT) {
        fire(exist_, path, {watch_event_type::created, path});
    } else if (type == ZOO_DELETED_EVENT) {
        fire(data_, path, {watch_event_type::deleted, path});
        fire(exist_, path, {watch_event_type::deleted, path});
        fire(child_, path, {watch_event_type::deleted, path});
    } else if (type == ZOO_CHANGED_EVENT) {
        fire(data_, path, {watch_event_type::changed, path});
        fire(exist_, path, {watch_event_type::changed, path});
    } else if (type == ZOO_CHILD_EVENT) {
        fire(child_, path, {watch_event_type::child, path});
    }
}

void watch_table::fail_all(error_code ec)
{
    for (table* t : {&data_, &exist_, &child_}) {
        auto copy = std::move(*t);
        t->clear();
        for (auto& [path, list] : copy)
            for (auto& w : list)
                if (auto s = w.lock()) s->fire(ec, {watch_event_type::deleted, path});
    }
}

void watch_table::abandon(graveyard& g)
{
    for (table* t : {&data_, &exist_, &child_}) {
        auto copy = std::move(*t);
        t->clear();
        for (auto& [path, list] : copy)
            for (auto& w : list)
                if (auto s = w.lock()) s->abandon(g);
    }
}

}  // namespace zklock::detail
