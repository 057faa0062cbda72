// lab/layer_api.hpp: the trainable layer's API the lab uses (positions, the learned table's
// forward and backward, initializers, AdamW), in one include.
#pragma once

#include "posemb/embedding.hpp"
#include "posemb/errors.hpp"
#include "posemb/initializers.hpp"
#include "posemb/optimizers.hpp"
#include "posemb/positions.hpp"
