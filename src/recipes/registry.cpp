// The registry of recipes: the order in which names are matched (see recipes()).
#include <zklock/detail/recipe.hpp>

namespace zklock::detail {

std::span<const recipe* const> recipes() noexcept
{
    static constexpr const recipe* all[] = {&mutex_recipe, &writer_recipe, &reader_recipe, &semaphore_recipe,
                                            &election_recipe};
    return all;
}

}  // namespace zklock::detail
