/**
 * The session state shared by every step, tool, team member, condition and
 * router of a run. It is a service around one `Ref`: all updates are atomic,
 * so concurrent branches never lose each other's writes. Updates are pure
 * functions of the current value; treat the state as immutable (return new
 * objects instead of mutating) so changes can be found and reported.
 *
 * Two ways to reach it:
 *
 * - `SessionState.SessionState`, the untyped view (`Record<string, unknown>`),
 *   always available inside a run;
 * - a typed tag made from a Schema with `SessionState.Tag`, which a workflow
 *   declaring `state: ThatTag` provides; a step that uses it carries it in its
 *   `R` channel, so it cannot run in a workflow that does not provide it.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import { reportChange } from "./internal/state.js"

/**
 * The untyped shape of a session state: a JSON object.
 *
 * @since 0.1.0
 * @category models
 */
export type State = Record<string, unknown>

/**
 * Access to a session state of type `A`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service<A = State> {
  readonly get: Effect.Effect<A>
  readonly set: (value: A) => Effect.Effect<void>
  readonly update: (f: (state: A) => A) => Effect.Effect<void>
  readonly modify: <B>(f: (state: A) => readonly [B, A]) => Effect.Effect<B>
}

/**
 * The untyped session state of the current run.
 *
 * @since 0.1.0
 * @category tags
 */
export class SessionState extends Context.Tag("@sessionflow/core/SessionState")<SessionState, Service>() {}

/**
 * @since 0.1.0
 * @category accessors
 */
export const get: Effect.Effect<State, never, SessionState> = Effect.flatMap(SessionState, (s) => s.get)

/**
 * @since 0.1.0
 * @category accessors
 */
export const set = (value: State): Effect.Effect<void, never, SessionState> =>
  Effect.flatMap(SessionState, (s) => s.set(value))

/**
 * @since 0.1.0
 * @category accessors
 */
export const update = (f: (state: State) => State): Effect.Effect<void, never, SessionState> =>
  Effect.flatMap(SessionState, (s) => s.update(f))

/**
 * @since 0.1.0
 * @category accessors
 */
export const modify = <B>(f: (state: State) => readonly [B, State]): Effect.Effect<B, never, SessionState> =>
  Effect.flatMap(SessionState, (s) => s.modify(f))

/**
 * A typed session-state tag: a Context tag whose service is `Service<A>`,
 * carrying the Schema used to decode the stored state and encode it back.
 *
 * @since 0.1.0
 * @category models
 */
export interface StateTag<Self, A, I = A> extends Context.Tag<Self, Service<A>> {
  readonly schema: Schema.Schema<A, I>
}

declare const UntypedTypeId: unique symbol

/**
 * The state of a workflow without a typed state tag: an untyped JSON object,
 * reached through {@link SessionState}. A type only.
 *
 * @since 0.1.0
 * @category models
 */
export interface Untyped {
  readonly [UntypedTypeId]: typeof UntypedTypeId
}

/**
 * Any workflow state: a typed state tag, or {@link Untyped}.
 *
 * @since 0.1.0
 * @category models
 */
export type Any = StateTag<any, any, any> | Untyped

/**
 * The state type of a tag (`State` for {@link Untyped}).
 *
 * @since 0.1.0
 * @category type-level
 */
export type Type<T> = T extends Untyped ? State : T extends StateTag<infer _Self, infer A, infer _I> ? A : never

/**
 * The stored (encoded) form of a tag's state (`State` for {@link Untyped}).
 *
 * @since 0.1.0
 * @category type-level
 */
export type Encoded<T> = T extends Untyped ? State : T extends StateTag<infer _Self, infer _A, infer I> ? I : never

/**
 * The service a typed tag stands for in `R` (`never` for {@link Untyped}).
 *
 * @since 0.1.0
 * @category type-level
 */
export type Identifier<T> = T extends Untyped ? never
  : T extends StateTag<infer Self, infer _A, infer _I> ? Self
  : never

/**
 * The class returned by {@link Tag}: a {@link StateTag} with accessors.
 *
 * @since 0.1.0
 * @category models
 */
export interface TagClass<Self, Id extends string, A, I> extends Context.TagClass<Self, Id, Service<A>> {
  readonly schema: Schema.Schema<A, I>
  readonly get: Effect.Effect<A, never, Self>
  readonly set: (value: A) => Effect.Effect<void, never, Self>
  readonly update: (f: (state: A) => A) => Effect.Effect<void, never, Self>
  readonly modify: <B>(f: (state: A) => readonly [B, A]) => Effect.Effect<B, never, Self>
}

/**
 * Makes a typed session-state tag from struct fields or a Schema.
 *
 * ```ts
 * class ShoppingList extends SessionState.Tag("ShoppingList")<ShoppingList>()({
 *   shopping_list: Schema.Array(Schema.String)
 * }) {}
 *
 * const addMilk = ShoppingList.update((s) => ({ shopping_list: [...s.shopping_list, "milk"] }))
 * //    ^? Effect<void, never, ShoppingList>
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const Tag = <const Id extends string>(id: Id) =>
<Self>(): {
  <Fields extends Schema.Struct.Fields>(
    fields: Fields
  ): TagClass<Self, Id, Schema.Struct.Type<Fields>, Schema.Struct.Encoded<Fields>>
  <A, I>(schema: Schema.Schema<A, I>): TagClass<Self, Id, A, I>
} =>
(fieldsOrSchema: Schema.Struct.Fields | Schema.Schema<any, any>) => {
  const schema = Schema.isSchema(fieldsOrSchema) ? fieldsOrSchema : Schema.Struct(fieldsOrSchema)
  const TagBase = Context.Tag(id)<Self, Service<unknown>>()
  const tag = TagBase as unknown as Context.Tag<Self, Service<unknown>>
  return Object.assign(TagBase, {
    schema,
    get: Effect.flatMap(tag, (s) => s.get),
    set: (value: unknown) => Effect.flatMap(tag, (s) => s.set(value)),
    update: (f: (state: unknown) => unknown) => Effect.flatMap(tag, (s) => s.update(f)),
    modify: <B>(f: (state: unknown) => readonly [B, unknown]) => Effect.flatMap(tag, (s) => s.modify(f))
  }) as any
}

/**
 * Makes a state service over an existing `Ref`. Every update that changes the
 * value emits a `StateChanged` event (when the run's events are consumed)
 * describing what changed, at the step path of the fiber that made it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromRef = <A>(ref: Ref.Ref<A>): Service<A> => {
  const modify = <B>(f: (state: A) => readonly [B, A]): Effect.Effect<B> =>
    Effect.flatMap(
      Ref.modify(ref, (prev): readonly [readonly [B, A, A], A] => {
        const [b, next] = f(prev)
        return [[b, prev, next], next]
      }),
      ([b, prev, next]) => reportChange(b, prev, next)
    )
  return {
    get: Ref.get(ref),
    set: (value) => modify(() => [undefined, value]),
    update: (f) => modify((s) => [undefined, f(s)]),
    modify
  }
}

/**
 * Makes a state service holding `initial`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <A>(initial: A): Effect.Effect<Service<A>> => Effect.map(Ref.make(initial), fromRef)
