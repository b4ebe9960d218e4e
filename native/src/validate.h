// The addon's trust boundary: checks of every value that crosses from JavaScript, and the entry points
// through which JS calls the native classes. An entry point checks that `this` is an object of its
// class (a type tag, not the prototype chain), and turns every C++ exception into a JS error:
// node-addon-api converts only Napi::Error, and anything else escaping a callback terminates the process.
#pragma once

#include <napi.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace specgate {

[[noreturn]] inline void throwTypeError(Napi::Env env, const std::string& message) { throw Napi::TypeError::New(env, message); }

[[noreturn]] inline void throwRangeError(Napi::Env env, const std::string& message) { throw Napi::RangeError::New(env, message); }

/** An integer-valued Number in [min, max]; `name` names the argument in the error. */
inline int64_t integerArgument(Napi::Env env, Napi::Value value, const std::string& name, int64_t min, int64_t max) {
    if (!value.IsNumber()) throwTypeError(env, name + " must be a number");
    const double number = value.As<Napi::Number>().DoubleValue();
    if (!std::isfinite(number) || std::trunc(number) != number) throwRangeError(env, name + " must be an integer");
    if (number < static_cast<double>(min) || number > static_cast<double>(max))
        throwRangeError(env, name + " must be in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    return static_cast<int64_t>(number);
}

/** A finite Number in [min, max] (max may be HUGE_VAL: no upper bound). */
inline double numberArgument(Napi::Env env, Napi::Value value, const std::string& name, double min, double max) {
    if (!value.IsNumber()) throwTypeError(env, name + " must be a number");
    const double number = value.As<Napi::Number>().DoubleValue();
    if (!std::isfinite(number) || number < min || number > max) {
        char bounds[64];
        std::snprintf(bounds, sizeof bounds, std::isfinite(max) ? "[%g, %g]" : "[%g, Infinity)", min, max);
        throwRangeError(env, name + " must be a finite number in " + bounds);
    }
    return number;
}

inline Napi::Object objectArgument(Napi::Env env, Napi::Value value, const std::string& name) {
    if (!value.IsObject()) throwTypeError(env, name + " must be an object");
    return value.As<Napi::Object>();
}

inline std::string stringArgument(Napi::Env env, Napi::Value value, const std::string& name) {
    if (!value.IsString()) throwTypeError(env, name + " must be a string");
    return value.As<Napi::String>().Utf8Value();
}

/** A copy of an Int32Array (exactly that element type: any other would be read past its end or misread). */
inline std::vector<int32_t> int32ArrayArgument(Napi::Env env, Napi::Value value, const std::string& name) {
    if (!value.IsTypedArray() || value.As<Napi::TypedArray>().TypedArrayType() != napi_int32_array)
        throwTypeError(env, name + " must be an Int32Array");
    Napi::Int32Array array = value.As<Napi::Int32Array>();
    if (array.ElementLength() == 0) return {};
    return std::vector<int32_t>(array.Data(), array.Data() + array.ElementLength());
}

/** Runs an entry point's body; a C++ exception becomes a pending JS exception (and the result null). */
template <typename Body> napi_value guarded(napi_env env, Body&& body) {
    try {
        return body();
    } catch (const Napi::Error& error) {
        error.ThrowAsJavaScriptException();
    } catch (const std::exception& error) {
        Napi::Error::New(env, error.what()).ThrowAsJavaScriptException();
    } catch (...) {
        Napi::Error::New(env, "the native addon failed with an unknown exception").ThrowAsJavaScriptException();
    }
    return nullptr;
}

/** A constructor's body: its C++ exceptions leave as Napi::Error, which node-addon-api's constructor wrapper converts. */
template <typename Body> void constructing(Napi::Env env, Body&& body) {
    try {
        body();
    } catch (const Napi::Error&) {
        throw;
    } catch (const std::exception& error) {
        throw Napi::Error::New(env, error.what());
    } catch (...) {
        throw Napi::Error::New(env, "the native addon failed with an unknown exception");
    }
}

/** `value` as a T (an ObjectWrap class with a `typeTag` and a `className`), or a TypeError naming it. */
template <typename T> T* unwrapTagged(Napi::Env env, Napi::Value value, const std::string& name) {
    if (!value.IsObject() || !value.As<Napi::Object>().CheckTypeTag(&T::typeTag)) throwTypeError(env, name + " must be a " + T::className);
    return T::Unwrap(value.As<Napi::Object>());
}

template <typename T, Napi::Value (T::*Method)(const Napi::CallbackInfo&)>
napi_value callTagged(napi_env env, napi_callback_info callbackInfo) {
    return guarded(env, [&]() -> napi_value {
        Napi::CallbackInfo info(env, callbackInfo);
        return (unwrapTagged<T>(info.Env(), info.This(), "this")->*Method)(info);
    });
}

/** A prototype method of T, called through callTagged (ObjectWrap's own wrappers unwrap `this` unchecked). */
template <typename T, Napi::Value (T::*Method)(const Napi::CallbackInfo&)> Napi::ClassPropertyDescriptor<T> taggedMethod(const char* name) {
    return napi_property_descriptor{name, nullptr, &callTagged<T, Method>, nullptr, nullptr, nullptr, napi_default, nullptr};
}

/** A prototype getter of T, called through callTagged. */
template <typename T, Napi::Value (T::*Method)(const Napi::CallbackInfo&)> Napi::ClassPropertyDescriptor<T> taggedGetter(const char* name) {
    return napi_property_descriptor{name, nullptr, nullptr, &callTagged<T, Method>, nullptr, nullptr, napi_default, nullptr};
}

} // namespace specgate
