// Turning any plan into a feasible one, shared by the search heuristics.
#pragma once

#include "tailor/plan/problem.h"

namespace tailor::plan {

/// Makes `choice` fit problem.budget, then spends the bytes left over.
/// Downgrade phase: while over budget, moves one layer to an option with fewer
/// bytes, the move that raises the objective least per byte saved. Fill phase:
/// while some upgrade fits and lowers the objective, takes the one that lowers
/// it most per byte added. Pairwise terms with the neighbouring layers count
/// in every move. Requires a feasible problem; the result is never over budget.
void repair(const Problem& problem, Choice& choice);

}  // namespace tailor::plan
