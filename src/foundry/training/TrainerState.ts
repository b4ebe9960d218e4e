import {Random} from "../../random/Random.js";
import {checkLlamaConfig, headDimension, type LlamaConfig} from "../model/LlamaConfig.js";
import {checkLlamaWeights, type LlamaWeights, zeroLlamaWeights} from "../model/LlamaWeights.js";
import {RopeTable} from "../model/RopeTable.js";
import type {AdamWMoments} from "./adamWUpdate.js";
import {checkTrainingOptions, type TrainingOptions} from "./TrainingOptions.js";

/** Everything a training run carries from step to step; a checkpoint stores all of it but the rope table. */
export interface TrainerState {
    readonly config: LlamaConfig;
    readonly options: TrainingOptions;
    readonly weights: LlamaWeights;
    readonly moments: AdamWMoments;
    /** Steps completed. */
    step: number;
    /** The batch sampler; its state is checkpointed so a resumed run draws the same batches. */
    random: Random;
    readonly rope: RopeTable;
}

/** A fresh run from `weights` (taken over, not copied): zero moments, step 0, sampler seeded by options.seed. */
export function createTrainerState(config: LlamaConfig, options: TrainingOptions, weights: LlamaWeights): TrainerState {
    checkLlamaConfig(config);
    checkTrainingOptions(options);
    checkLlamaWeights(config, weights);
    return {
        config,
        options,
        weights,
        moments: {first: zeroLlamaWeights(config), second: zeroLlamaWeights(config)},
        step: 0,
        random: new Random(options.seed),
        rope: new RopeTable(config.contextLength, headDimension(config), config.ropeFreqBase)
    };
}
