// The registry of recipes: the order in which names are matched (see recipes()).
#include <zklock/detail/recipe.hpp>

namespace zklock::detail {

extern const recipe election_recipe;

std::span<const recipe* const> recipes() noexcept
{
    static constexpr const recipe* all[] = {&mutex_recipe, &writer_recipe, &reader_recipe, &semaphore_recipe,
                                            &election_recipe};
    return all;
}

const recipe* find_recipe(std::string_view name) noexcept
{
    for (const recipe* r : recipes())
        if (r->name == name) return r;
    return nullptr;
}

}  // namespace zklock::detail
