#include "bridge/watch_table.hpp"

#include "bridge/zk_client.h"

namespace zklock::detail {

void watch_table::entry::collect(std::vector<std::weak_ptr<watch_state>>& out) const
{
    out.push_back(first);
    if (more) out.insert(out.end(), more->begin(), more->end());
}

void watch_table::add(watch_kind kind, std::string_view path, const std::shared_ptr<watch_state>& w)
{
    table& t = kind == watch_kind::data ? data_ : kind == watch_kind::exist ? exist_ : child_;
    auto it = t.find(path);
    if (it == t.end()) {
        t.insert(entry{w->path() == path ? w->path() : shared_path(path), w, nullptr});
        return;
    }
    // In the order they were added: the first place is taken again only while it is the only one.
    if (it->more) std::erase_if(*it->more, [](const std::weak_ptr<watch_state>& x) { return x.expired(); });
    if (it->first.expired() && (!it->more || it->more->empty())) {
        it->first = w;
        return;
    }
    if (!it->more) it->more = std::make_unique<std::vector<std::weak_ptr<watch_state>>>();
    it->more->push_back(w);
}

void watch_table::fire(table& t, std::string_view path, watch_event ev)
{
    auto it = t.find(path);
    if (it == t.end()) return;
    std::vector<std::weak_ptr<watch_state>> list;
    it->collect(list);
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
        for (auto& e : copy) {
            std::vector<std::weak_ptr<watch_state>> list;
            e.collect(list);
            for (auto& w : list)
                if (auto s = w.lock()) s->fire(ec, {watch_event_type::deleted, e.path.str()});
        }
    }
}

void watch_table::abandon(graveyard& g)
{
    for (table* t : {&data_, &exist_, &child_}) {
        auto copy = std::move(*t);
        t->clear();
        for (auto& e : copy) {
            std::vector<std::weak_ptr<watch_state>> list;
            e.collect(list);
            for (auto& w : list)
                if (auto s = w.lock()) s->abandon(g);
        }
    }
}

}  // namespace zklock::detail
